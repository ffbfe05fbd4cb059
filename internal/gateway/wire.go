package gateway

import (
	"fmt"
	"log/slog"

	"github.com/handset-voice/handset/internal/agent/echo"
	agentopenai "github.com/handset-voice/handset/internal/agent/openai"
	"github.com/handset-voice/handset/internal/agent/webhook"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/stt/deepgram"
	sttopenai "github.com/handset-voice/handset/internal/stt/openai"
	"github.com/handset-voice/handset/internal/stt/sphinx"
	"github.com/handset-voice/handset/internal/tts/elevenlabs"
	"github.com/handset-voice/handset/internal/tts/espeak"
	"github.com/handset-voice/handset/internal/tts/flite"
	ttsopenai "github.com/handset-voice/handset/internal/tts/openai"
	"github.com/handset-voice/handset/internal/voice"
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

// BuildAgent connects the agent runtime HANDSET_AGENT names.
func BuildAgent(cfg *config.Config, log *slog.Logger) (voice.Agent, error) {
	if cfg.Agent.Runtime == config.AgentEcho {
		return echo.New(), nil
	}
	client, err := AgentClient(cfg)
	if err != nil {
		return nil, err
	}
	warnInsecureAgent(log, cfg)
	switch cfg.Agent.Runtime {
	case config.AgentOpenAI:
		return agentopenai.New(agentopenai.Options{
			Name:         cfg.Agent.Runtime,
			BaseURL:      cfg.AgentURL(),
			Key:          cfg.Agent.Key.Reveal(),
			Model:        cfg.AgentModel(),
			SystemPrompt: cfg.Agent.SystemPrompt,
			SystemAsUser: cfg.Agent.SystemPromptAsUser,
			Timeout:      cfg.Agent.Timeout,
			HTTPClient:   client,
			Logger:       log,
		})
	case config.AgentHermes:
		return buildHermes(cfg, client, log)
	case config.AgentOpenClaw:
		return buildOpenClaw(cfg, client, log)
	case config.AgentWebhook:
		return webhook.New(webhook.Options{
			URL:        cfg.AgentURL(),
			Key:        cfg.Agent.Key.Reveal(),
			Timeout:    cfg.Agent.Timeout,
			HTTPClient: client,
			Logger:     log,
		})
	case "":
		return nil, &settingError{msg: "HANDSET_AGENT (agent.runtime) is not set", hint: "set HANDSET_AGENT to one of hermes, openclaw, openai, webhook, echo"}
	}
	return nil, notYet("HANDSET_AGENT", cfg.Agent.Runtime)
}

// BuildSTT builds the speech-to-text provider HANDSET_STT names.
func BuildSTT(cfg *config.Config, log *slog.Logger) (voice.Recognizer, error) {
	if cfg.STT.Provider == "" {
		return nil, &settingError{msg: "HANDSET_STT (stt.provider) is not set", hint: "set HANDSET_STT=deepgram and DEEPGRAM_API_KEY, or run `handset demo` for the offline engines"}
	}
	return buildRecognizer(cfg, "HANDSET_STT", cfg.STT.Provider, log)
}

// buildRecognizer builds speech-to-text provider name, chosen by setting env (HANDSET_STT
// or HANDSET_STT_FALLBACK): the one place each provider is put together.
func buildRecognizer(cfg *config.Config, env, name string, log *slog.Logger) (voice.Recognizer, error) {
	switch name {
	case config.STTDeepgram:
		r, err := deepgram.New(deepgram.Options{
			Key:      cfg.STT.Deepgram.Key.Reveal(),
			BaseURL:  cfg.STT.Deepgram.URL,
			Model:    cfg.STT.Deepgram.Model,
			Language: cfg.STT.Deepgram.Language,
			Logger:   log,
		})
		if err != nil {
			return nil, fmt.Errorf("HANDSET_DEEPGRAM_URL: %w", err)
		}
		return r, nil
	case config.STTOpenAI:
		r, err := sttopenai.New(sttopenai.Options{
			BaseURL: cfg.OpenAI.URL,
			Key:     cfg.OpenAI.Key.Reveal(),
			Model:   cfg.STT.OpenAIModel,
			Logger:  log,
		})
		if err != nil {
			return nil, fmt.Errorf("%s=openai: %w", env, err)
		}
		return r, nil
	case config.STTSphinx:
		return buildSphinx(cfg, env, log)
	}
	return nil, notYet(env, name)
}

// BuildTTS builds the text-to-speech provider HANDSET_TTS names.
func BuildTTS(cfg *config.Config, log *slog.Logger) (voice.Synthesizer, error) {
	if cfg.TTS.Provider == "" {
		return nil, &settingError{msg: "HANDSET_TTS (tts.provider) is not set", hint: "set HANDSET_TTS=elevenlabs and ELEVENLABS_API_KEY, or run `handset demo` for the offline engines"}
	}
	return buildSynthesizer(cfg, "HANDSET_TTS", cfg.TTS.Provider, log)
}

// buildSynthesizer builds text-to-speech provider name, chosen by setting env (HANDSET_TTS
// or HANDSET_TTS_FALLBACK): the one place each provider is put together.
func buildSynthesizer(cfg *config.Config, env, name string, log *slog.Logger) (voice.Synthesizer, error) {
	wrap := func(t voice.Synthesizer, err error) (voice.Synthesizer, error) {
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", env, name, err)
		}
		return t, nil
	}
	switch name {
	case config.TTSElevenLabs:
		return elevenlabs.New(elevenlabs.Options{
			Key:           cfg.TTS.ElevenLabs.Key.Reveal(),
			BaseURL:       cfg.TTS.ElevenLabs.URL,
			Voice:         cfg.TTS.ElevenLabs.Voice,
			Model:         cfg.TTS.ElevenLabs.Model,
			HeaderTimeout: cfg.TTS.Timeout,
			Logger:        log,
		}), nil
	case config.TTSOpenAI:
		return wrap(ttsopenai.New(ttsopenai.Options{
			BaseURL:       cfg.OpenAI.URL,
			Key:           cfg.OpenAI.Key.Reveal(),
			Model:         cfg.TTS.OpenAI.Model,
			Voice:         cfg.TTS.OpenAI.Voice,
			HeaderTimeout: cfg.TTS.Timeout,
			Logger:        log,
		}))
	case config.TTSFlite:
		return wrap(flite.New(flite.Options{Voice8k: cfg.TTS.FliteVoice, Voice16k: cfg.TTS.FliteWidebandVoice, Logger: log}))
	case config.TTSEspeak:
		return wrap(espeak.New(espeak.Options{Voice: cfg.TTS.EspeakVoice, Logger: log}))
	}
	return nil, notYet(env, name)
}

// buildSphinx loads the PocketSphinx decoders, saying what to install when it cannot.
func buildSphinx(cfg *config.Config, env string, log *slog.Logger) (voice.Recognizer, error) {
	if !sphinx.Available() {
		return nil, fmt.Errorf("%s=sphinx: %w", env, sphinx.ErrNotLinked)
	}
	if err := sphinx.CheckModel(cfg.STT.Sphinx.Model); err != nil {
		return nil, fmt.Errorf("%s=sphinx: %w", env, err)
	}
	r, err := sphinx.New(sphinx.Options{ModelDir: cfg.STT.Sphinx.Model, Decoders: cfg.STT.Sphinx.Decoders, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("%s=sphinx: %w", env, err)
	}
	log.Info("speech recognition: PocketSphinx (offline, demo quality: configure a cloud STT for real calls)",
		"decoders", cfg.STT.Sphinx.Decoders)
	return r, nil
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
