package cli

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/engines"
	_ "github.com/handset-voice/handset/internal/providers" // fills the catalogue of providers
	"github.com/handset-voice/handset/internal/registry"
)

// ---- speech to text, text to speech and VAD: the providers' own checks ----

// providerProbe is what a provider's checks get: this configuration, the section they
// belong to and the setting that chose the provider.
func (d *doctorRun) providerProbe(section, choice string) registry.Probe {
	return registry.Probe{
		Settings:   d.cfg,
		Section:    section,
		Choice:     choice,
		HTTP:       d.clientFor,
		EngineFile: func(name string) (string, error) { return engines.File(d.cfg, name) },
		Home:       d.home,
		Demo:       d.demo,
	}
}

// providerChecks are the checks of the provider of type P that setting env chooses, or why
// there are none.
func providerChecks[P registry.Provider](d *doctorRun, section, env, name string) []doctor.Check {
	switch p, ok := registry.Find[P](name); {
	case name == "":
		return []doctor.Check{doctor.Fixed(section, "provider", doctor.SkipResult(env+" is not set (see config)"))}
	case !ok:
		return []doctor.Check{doctor.Fixed(section, "provider", doctor.SkipResult(env+"="+name+" is not a provider (see config)"))}
	case p.Info().Checks == nil: // nothing to check before a call (as the echo agent)
		return nil
	default:
		return p.Info().Checks(d.providerProbe(section, env))
	}
}

func (d *doctorRun) sttChecks() []doctor.Check {
	return providerChecks[registry.STT](d, secSTT, "HANDSET_STT", d.cfg.STT.Provider)
}

func (d *doctorRun) ttsChecks() []doctor.Check {
	return providerChecks[registry.TTS](d, secTTS, "HANDSET_TTS", d.cfg.TTS.Provider)
}

// vadChecks check the configured VAD, or, with none configured, which engine serve would
// pick: the best available of silero, then webrtc, then energy.
func (d *doctorRun) vadChecks() []doctor.Check {
	choice := d.cfg.VAD.Engine
	if choice == "" {
		return []doctor.Check{doctor.Local(secVAD, "engine", d.bestVAD)}
	}
	if p, ok := registry.Find[registry.VAD](choice); ok {
		if p.Checks == nil {
			return nil
		}
		return p.Checks(d.providerProbe(secVAD, "HANDSET_VAD"))
	}
	return []doctor.Check{doctor.Fixed(secVAD, "engine", doctor.SkipResult("HANDSET_VAD="+choice+" is not an engine (see config)"))}
}

// bestVAD checks that silero, or else webrtc, loads and makes a detector, as serve would.
func (d *doctorRun) bestVAD(context.Context) doctor.Result {
	try := func(name string) error {
		p, ok := registry.Find[registry.VAD](name)
		if !ok {
			return errors.New("not in this binary's catalogue")
		}
		f, release, err := p.New(registry.Build{Settings: d.cfg, Log: slog.New(slog.DiscardHandler),
			EngineFile: func(name string) (string, error) { return engines.File(d.cfg, name) }})
		if err != nil {
			return err
		}
		return vad.Loads(f, release)
	}
	serr := try("silero")
	if serr == nil {
		return doctor.OKResult("silero (the best available)")
	}
	werr := try("webrtc")
	if werr == nil {
		return doctor.OKResult("webrtc (silero unavailable: " + serr.Error() + ")")
	}
	return doctor.WarnResult("only the energy VAD is available, and it is weak in noise (silero: "+serr.Error()+"; webrtc: "+werr.Error()+")",
		"run ./scripts/engines.sh for the WebRTC VAD (./scripts/setup.sh also builds Silero in), or set HANDSET_VAD=energy to accept it")
}

func (d *doctorRun) engineChecks() []doctor.Check {
	used := map[string]string{}
	switch d.cfg.STT.Provider {
	case config.STTSphinx:
		used["sphinx"] = secSTT
	}
	switch d.cfg.TTS.Provider {
	case config.TTSFlite, config.TTSEspeak:
		used[d.cfg.TTS.Provider] = secTTS
	}
	var cs []doctor.Check
	for _, e := range engines.List(d.cfg) {
		name := e.Name + " (" + e.Role + ")"
		state := strings.TrimPrefix(e.String(), name+": ")
		var r doctor.Result
		switch {
		case e.Linked && e.Problem == "":
			r = doctor.OKResult(state)
		case used[e.Name] != "":
			r = doctor.SkipResult(state + " (in use: see " + used[e.Name] + ")")
		default:
			r = doctor.SkipResult(state + " (not used by this configuration)")
		}
		cs = append(cs, doctor.Fixed(secEngines, name, r))
	}
	return cs
}
