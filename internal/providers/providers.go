// Package providers registers every provider this binary has, one line each: adding a
// carrier, a speech engine, a voice or an agent runtime is its own package plus a line here
// (docs/architecture.md, adding a provider).
package providers

import (
	"github.com/handset-voice/handset/internal/agent/echo"
	"github.com/handset-voice/handset/internal/agent/hermes"
	agentopenai "github.com/handset-voice/handset/internal/agent/openai"
	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/agent/webhook"
	"github.com/handset-voice/handset/internal/audio/vad/silero"
	"github.com/handset-voice/handset/internal/audio/vad/webrtc"
	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/sip"
	"github.com/handset-voice/handset/internal/carrier/telnyx"
	"github.com/handset-voice/handset/internal/carrier/twilio"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/stt/deepgram"
	sttopenai "github.com/handset-voice/handset/internal/stt/openai"
	"github.com/handset-voice/handset/internal/stt/sphinx"
	"github.com/handset-voice/handset/internal/tts/elevenlabs"
	"github.com/handset-voice/handset/internal/tts/espeak"
	"github.com/handset-voice/handset/internal/tts/flite"
	ttsopenai "github.com/handset-voice/handset/internal/tts/openai"
)

func init() {
	registry.Register(
		// carriers
		twilio.Provider,
		telnyx.Provider,
		plivo.Provider,
		sip.Provider,

		// speech to text
		deepgram.Provider,
		sttopenai.Provider,
		sphinx.Provider,

		// text to speech
		elevenlabs.Provider,
		ttsopenai.Provider,
		flite.Provider,
		espeak.Provider,

		// agent runtimes
		hermes.Provider,
		openclaw.Provider,
		agentopenai.Provider,
		webhook.Provider,
		echo.Provider,

		// voice activity detectors
		silero.Provider,
		webrtc.Provider,
		energyVAD,
	)
}
