package gateway

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/engines"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"

	_ "github.com/handset-voice/handset/internal/providers" // fills the catalogue the gateway builds from
)

// providers are the concrete collaborators every call shares.
type providers struct {
	agent       voice.Agent
	stt         voice.Recognizer
	sttFallback voice.Recognizer // nil: none configured
	tts         voice.Synthesizer
	ttsFallback voice.Synthesizer // nil: none configured
	newVAD      func(rate int) (vad.Detector, error)
	closeVAD    func() // releases the VAD engine at shutdown
}

// release frees what the providers hold (VAD engine, speech decoders, the agent runtime's
// connection and any run still going) at shutdown.
func (p providers) release() {
	if p.closeVAD != nil {
		p.closeVAD()
	}
	for _, x := range []any{p.agent, p.stt, p.sttFallback, p.tts, p.ttsFallback} {
		if c, ok := x.(interface{ Close() error }); ok {
			_ = c.Close()
		}
	}
}

// notYet explains a setting value that names something a later version brings.
func notYet(env, value string) error {
	return fmt.Errorf("%s=%s is not available in this version of handset", env, value)
}

// buildOf is what a provider chosen by setting choice is built with.
func buildOf(cfg *config.Config, choice string, log *slog.Logger) registry.Build {
	return registry.Build{Settings: cfg, Choice: choice, Log: log,
		EngineFile: func(name string) (string, error) { return engines.File(cfg, name) }}
}

// BuildAgent connects the agent runtime HANDSET_AGENT names.
func BuildAgent(cfg *config.Config, log *slog.Logger) (voice.Agent, error) {
	name := cfg.Agent.Runtime
	if name == "" {
		return nil, &settingError{msg: "HANDSET_AGENT (agent.runtime) is not set",
			hint: "set HANDSET_AGENT to one of " + strings.Join(registry.Names(registry.KindAgent), ", ")}
	}
	runtime, ok := registry.Find[registry.Agent](name)
	if !ok {
		return nil, notYet("HANDSET_AGENT", name)
	}
	if _, err := sessionKeys(cfg); err != nil { // with its hint, before the runtime reads it
		return nil, err
	}
	b := buildOf(cfg, "HANDSET_AGENT", log)
	if !runtime.Offline {
		client, err := AgentClient(cfg)
		if err != nil {
			return nil, err
		}
		b.HTTP = client
		warnInsecureAgent(log, cfg)
	}
	return runtime.New(b)
}

// BuildSTT builds the speech-to-text provider HANDSET_STT names.
func BuildSTT(cfg *config.Config, log *slog.Logger) (voice.Recognizer, error) {
	if cfg.STT.Provider == "" {
		return nil, &settingError{msg: "HANDSET_STT (stt.provider) is not set", hint: "set HANDSET_STT=deepgram and DEEPGRAM_API_KEY, or run `handset demo` for the offline engines"}
	}
	return buildRecognizer(cfg, "HANDSET_STT", cfg.STT.Provider, log)
}

// buildRecognizer builds speech-to-text provider name, chosen by setting env (HANDSET_STT
// or HANDSET_STT_FALLBACK).
func buildRecognizer(cfg *config.Config, env, name string, log *slog.Logger) (voice.Recognizer, error) {
	p, ok := registry.Find[registry.STT](name)
	if !ok {
		return nil, notYet(env, name)
	}
	return p.New(buildOf(cfg, env, log))
}

// BuildTTS builds the text-to-speech provider HANDSET_TTS names.
func BuildTTS(cfg *config.Config, log *slog.Logger) (voice.Synthesizer, error) {
	if cfg.TTS.Provider == "" {
		return nil, &settingError{msg: "HANDSET_TTS (tts.provider) is not set", hint: "set HANDSET_TTS=elevenlabs and ELEVENLABS_API_KEY, or run `handset demo` for the offline engines"}
	}
	return buildSynthesizer(cfg, "HANDSET_TTS", cfg.TTS.Provider, log)
}

// buildSynthesizer builds text-to-speech provider name, chosen by setting env (HANDSET_TTS
// or HANDSET_TTS_FALLBACK).
func buildSynthesizer(cfg *config.Config, env, name string, log *slog.Logger) (voice.Synthesizer, error) {
	p, ok := registry.Find[registry.TTS](name)
	if !ok {
		return nil, notYet(env, name)
	}
	return p.New(buildOf(cfg, env, log))
}

// buildProviders wires everything the configuration names.
func buildProviders(cfg *config.Config, log *slog.Logger) (providers, error) {
	var p providers
	var err error
	if p.agent, err = BuildAgent(cfg, log); err != nil {
		return p, err
	}
	if p.stt, err = BuildSTT(cfg, log); err != nil {
		return p, err
	}
	if p.tts, err = BuildTTS(cfg, log); err != nil {
		p.release()
		return p, err
	}
	if f := cfg.STT.Fallback; f != "" {
		if p.sttFallback, err = buildRecognizer(cfg, "HANDSET_STT_FALLBACK", f, log); err != nil {
			p.release()
			return p, err
		}
	}
	if f := cfg.TTS.Fallback; f != "" {
		if p.ttsFallback, err = buildSynthesizer(cfg, "HANDSET_TTS_FALLBACK", f, log); err != nil {
			p.release()
			return p, err
		}
	}
	if p.newVAD, p.closeVAD, err = buildVAD(cfg, log); err != nil {
		p.release()
	}
	return p, err
}
