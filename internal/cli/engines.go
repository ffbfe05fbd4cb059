package cli

import (
	"fmt"
	"log/slog"
	"os/exec"

	"github.com/handset-voice/handset/internal/audio/vad/silero"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/stt/sphinx"
	"github.com/handset-voice/handset/internal/tts/flite"
)

// engine is one offline speech engine and whether this binary and machine can run it.
type engine struct {
	Name   string `json:"name"`
	Role   string `json:"role"`   // "stt", "tts", "vad"
	Linked bool   `json:"linked"` // compiled into this binary (or, for a program, found)
	// Problem says what is missing on this machine, with the fix; empty when ready.
	Problem string `json:"problem,omitempty"`
}

// setupHint is how every missing engine gets installed.
const setupHint = "run ./scripts/setup.sh (it installs the Debian packages and npm artefacts and builds with -tags embedded)"

// engines reports the offline engines: linked into the binary, and their files present.
func engines(cfg *config.Config) []engine {
	out := []engine{
		{Name: "sphinx", Role: "stt", Linked: sphinx.Available()},
		{Name: "flite", Role: "tts", Linked: flite.Available()},
		{Name: "espeak", Role: "tts"},
		{Name: "silero", Role: "vad", Linked: silero.Available()},
		{Name: "webrtc", Role: "vad", Linked: true},
	}
	for i := range out {
		e := &out[i]
		switch {
		case e.Name == "espeak":
			_, err := exec.LookPath("espeak-ng")
			e.Linked = err == nil
			if err != nil {
				e.Problem = "espeak-ng is not installed: apt-get install espeak-ng"
			}
		case !e.Linked:
			e.Problem = "not in this binary (built without -tags embedded): " + setupHint
		case e.Name == "sphinx":
			if err := sphinx.CheckModel(cfg.STT.Sphinx.Model); err != nil {
				e.Problem = err.Error()
			}
		case e.Name == "silero":
			if _, err := engineFile(cfg, ortLibFile); err != nil {
				e.Problem = err.Error()
			} else if _, err := engineFile(cfg, sileroModelFile); err != nil {
				e.Problem = err.Error()
			}
		case e.Name == "webrtc":
			if _, err := engineFile(cfg, fvadFile); err != nil {
				e.Problem = err.Error()
			}
		}
	}
	return out
}

// engineLine is one engine for humans: "sphinx (stt): ready".
func (e engine) String() string {
	state := "ready"
	switch {
	case !e.Linked && e.Name == "espeak":
		state = "not installed"
	case !e.Linked:
		state = "not linked"
	case e.Problem != "":
		state = "linked, but " + e.Problem
	}
	return fmt.Sprintf("%s (%s): %s", e.Name, e.Role, state)
}

// logEngines says at start-up which offline engines this binary links and can run.
func logEngines(log *slog.Logger, cfg *config.Config) {
	attrs := []any{"build_tags", buildTags()}
	for _, e := range engines(cfg) {
		state := "ready"
		if !e.Linked {
			state = "absent"
		} else if e.Problem != "" {
			state = "files missing"
		}
		attrs = append(attrs, e.Name, state)
	}
	log.Info("offline engines", attrs...)
}
