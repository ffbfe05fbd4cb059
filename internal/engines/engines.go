// Package engines knows the offline speech engines (PocketSphinx, Flite, eSpeak NG, the
// Silero and WebRTC voice activity detectors): whether this binary links them, and where
// their files are found on this machine.
package engines

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/handset-voice/handset/internal/audio/vad/silero"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/stt/sphinx"
	"github.com/handset-voice/handset/internal/tts/flite"
)

// Files of the embedded engines, as scripts/engines.sh lays them out.
const (
	ORTLibFile      = "libonnxruntime.so"
	SileroModelFile = "silero_vad_v5.onnx"
	FVADFile        = "fvad.wasm"
)

// BuildTags are the tags this binary was built with ("embedded" links the offline engines).
func BuildTags() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-tags" {
				return s.Value
			}
		}
	}
	return ""
}

// Engine is one offline speech engine and whether this binary and machine can run it.
type Engine struct {
	Name   string `json:"name"`
	Role   string `json:"role"`   // "stt", "tts", "vad"
	Linked bool   `json:"linked"` // compiled into this binary (or, for a program, found)
	// Problem says what is missing on this machine, with the fix; empty when ready.
	Problem string `json:"problem,omitempty"`
	// Files are the engine files it loads, where they were found.
	Files []string `json:"files,omitempty"`
	// missingFile is the engine file not found, which Problem explains at length.
	missingFile string
}

// SetupHint is how every missing engine gets installed.
const SetupHint = "run ./scripts/setup.sh (it installs the Debian packages and npm artefacts and builds with -tags embedded)"

// List reports the offline engines: linked into the binary, and their files present.
func List(cfg *config.Config) []Engine {
	out := []Engine{
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
			e.Problem = "not in this binary (built without -tags embedded): " + SetupHint
		case e.Name == "sphinx":
			if err := sphinx.CheckModel(cfg.STT.Sphinx.Model); err != nil {
				e.Problem = err.Error()
			}
		case e.Name == "silero":
			e.findFiles(cfg, ORTLibFile, SileroModelFile)
		case e.Name == "webrtc":
			e.findFiles(cfg, FVADFile)
		}
	}
	return out
}

// findFiles records where the engine's files are, or the first one missing as its problem.
func (e *Engine) findFiles(cfg *config.Config, names ...string) {
	for _, n := range names {
		p, err := File(cfg, n)
		if err != nil {
			e.Problem, e.Files, e.missingFile = err.Error(), nil, n
			return
		}
		e.Files = append(e.Files, p)
	}
}

// String is one engine for humans: "sphinx (stt): ready", with the folder its files came
// from, so a binary run from elsewhere shows which copy it loads.
func (e Engine) String() string {
	state := "ready"
	if len(e.Files) > 0 {
		var dirs []string
		for _, f := range e.Files {
			if d := filepath.Dir(f); !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
		state += " (files in " + strings.Join(dirs, ", ") + ")"
	}
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

// Brief is String without the list of places looked, for a report that lists them once.
func (e Engine) Brief() string {
	if e.Linked && e.missingFile != "" {
		return fmt.Sprintf("%s (%s): linked, but %s was not found", e.Name, e.Role, e.missingFile)
	}
	return e.String()
}

// Log says at start-up which offline engines this binary links and can run.
func Log(log *slog.Logger, cfg *config.Config) {
	attrs := []any{"build_tags", BuildTags()}
	for _, e := range List(cfg) {
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

// Engine files are looked for in these places, in order (docs/offline.md):
//
//  1. HANDSET_ENGINES_DIR, when set, and then nowhere else;
//  2. ./.cache/engines, where scripts/engines.sh puts them in a checkout;
//  3. beside the binary: <bin dir>/engines, <bin dir>/../share/handset/engines (what
//     `handset install --prefix` lays out) and <bin dir>/../.cache/engines (bin/handset
//     in a checkout);
//  4. the XDG data folder: $XDG_DATA_HOME/handset/engines, by default
//     ~/.local/share/handset/engines;
//  5. /usr/local/share/handset/engines, then /usr/share/handset/engines.

// Place is one folder engine files are looked for in, and why it is on the list.
type Place struct {
	Dir, Why string
}

func (p Place) String() string { return p.Dir + " (" + p.Why + ")" }

// Lookup is what the lookup reads of the process; tests make their own.
type Lookup struct {
	Explicit string              // HANDSET_ENGINES_DIR
	Getenv   func(string) string // for XDG_DATA_HOME and HOME
	Exe      string              // the running binary; empty when unknown
	WorkDir  string              // the working folder, for relative places
}

// SystemLookup is the lookup for this process and configuration.
func SystemLookup(cfg *config.Config) Lookup {
	l := Lookup{Explicit: cfg.EnginesDir, Getenv: os.Getenv}
	l.Exe, _ = os.Executable()
	l.WorkDir, _ = os.Getwd()
	return l
}

// places are the folders looked in, in order, absolute and each once.
func (l Lookup) places() []Place {
	abs := func(d string) string {
		if !filepath.IsAbs(d) && l.WorkDir != "" {
			d = filepath.Join(l.WorkDir, d)
		}
		return filepath.Clean(d)
	}
	if l.Explicit != "" {
		return []Place{{abs(l.Explicit), "HANDSET_ENGINES_DIR"}}
	}
	var out []Place
	add := func(dir, why string) {
		dir = abs(dir)
		if !slices.ContainsFunc(out, func(p Place) bool { return p.Dir == dir }) {
			out = append(out, Place{dir, why})
		}
	}
	add(filepath.Join(".cache", "engines"), "working folder")
	if l.Exe != "" {
		bin := filepath.Dir(l.Exe)
		add(filepath.Join(bin, "engines"), "beside the binary")
		add(filepath.Join(bin, "..", "share", "handset", "engines"), "beside the binary")
		add(filepath.Join(bin, "..", ".cache", "engines"), "beside the binary")
	}
	// XDG: a relative XDG_DATA_HOME is invalid and ignored.
	if d := l.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		add(filepath.Join(d, "handset", "engines"), "XDG_DATA_HOME")
	} else if h := l.Getenv("HOME"); h != "" {
		add(filepath.Join(h, ".local", "share", "handset", "engines"), "XDG data folder")
	}
	add("/usr/local/share/handset/engines", "system")
	add("/usr/share/handset/engines", "system")
	return out
}

// Find is the first place holding the file name.
func (l Lookup) Find(name string) (string, error) {
	places := l.places()
	for _, p := range places {
		f := filepath.Join(p.Dir, name)
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			return f, nil
		}
	}
	return "", &missingError{name: name, places: places}
}

// missingError names a missing engine file and every place looked.
type missingError struct {
	name   string
	places []Place
}

func (e *missingError) Error() string {
	looked := make([]string, len(e.places))
	for i, p := range e.places {
		looked[i] = p.String()
	}
	return fmt.Sprintf("%s not found in %s: run ./scripts/engines.sh in a checkout, or set HANDSET_ENGINES_DIR",
		e.name, strings.Join(looked, ", "))
}

// File finds the engine file name for this configuration.
func File(cfg *config.Config, name string) (string, error) {
	return SystemLookup(cfg).Find(name)
}

// FileNames are every engine file, in the order reports list them.
var FileNames = []string{ORTLibFile, SileroModelFile, FVADFile}

// FilesReport says where each engine file was found, and every place looked when
// one is missing.
func FilesReport(l Lookup) string {
	var b strings.Builder
	b.WriteString("engine files:\n")
	missing := false
	for _, n := range FileNames {
		p, err := l.Find(n)
		if err != nil {
			p, missing = "not found", true
		}
		fmt.Fprintf(&b, "  %-20s %s\n", n, p)
	}
	if missing {
		b.WriteString("  looked in, in order:\n")
		for _, p := range l.places() {
			fmt.Fprintf(&b, "    %s\n", p)
		}
	}
	return b.String()
}
