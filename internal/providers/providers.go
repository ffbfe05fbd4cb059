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
	"github.com/handset-voice/handset/internal/registry"
)

func init() {
	registry.Register(
		// carriers

		// speech to text

		// text to speech

		// agent runtimes
		hermes.Provider,
		openclaw.Provider,
		agentopenai.Provider,
		webhook.Provider,
		echo.Provider,

		// voice activity detectors
	)
}
