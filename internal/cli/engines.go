package cli

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

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
	// Files are the engine files it loads, where they were found.
	Files []string `json:"files,omitempty"`
	// missingFile is the engine file not found, which Problem explains at length.
	missingFile string
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
			e.findFiles(cfg, ortLibFile, sileroModelFile)
		case e.Name == "webrtc":
			e.findFiles(cfg, fvadFile)
		}
	}
	return out
}

// findFiles records where the engine's files are, or the first one missing as its problem.
func (e *engine) findFiles(cfg *config.Config, names ...string) {
	for _, n := range names {
		p, err := engineFile(cfg, n)
		if err != nil {
			e.Problem, e.Files, e.missingFile = err.Error(), nil, n
			return
		}
		e.Files = append(e.Files, p)
	}
}

// String is one engine for humans: "sphinx (stt): ready", with the folder its files came
// from, so a binary run from elsewhere shows which copy it loads.
func (e engine) String() string {
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

// brief is String without the list of places looked, for a report that lists them once.
func (e engine) brief() string {
	if e.Linked && e.missingFile != "" {
		return fmt.Sprintf("%s (%s): linked, but %s was not found", e.Name, e.Role, e.missingFile)
	}
	return e.String()
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

// enginePlace is one folder engine files are looked for in, and why it is on the list.
type enginePlace struct {
	Dir, Why string
}

func (p enginePlace) String() string { return p.Dir + " (" + p.Why + ")" }

// engineLookup is what the lookup reads of the process; tests make their own.
type engineLookup struct {
	explicit string              // HANDSET_ENGINES_DIR
	getenv   func(string) string // for XDG_DATA_HOME and HOME
	exe      string              // the running binary; empty when unknown
	wd       string              // the working folder, for relative places
}

// systemLookup is the lookup for this process and configuration.
func systemLookup(cfg *config.Config) engineLookup {
	l := engineLookup{explicit: cfg.EnginesDir, getenv: os.Getenv}
	l.exe, _ = os.Executable()
	l.wd, _ = os.Getwd()
	return l
}

// places are the folders looked in, in order, absolute and each once.
func (l engineLookup) places() []enginePlace {
	abs := func(d string) string {
		if !filepath.IsAbs(d) && l.wd != "" {
			d = filepath.Join(l.wd, d)
		}
		return filepath.Clean(d)
	}
	if l.explicit != "" {
		return []enginePlace{{abs(l.explicit), "HANDSET_ENGINES_DIR"}}
	}
	var out []enginePlace
	add := func(dir, why string) {
		dir = abs(dir)
		if !slices.ContainsFunc(out, func(p enginePlace) bool { return p.Dir == dir }) {
			out = append(out, enginePlace{dir, why})
		}
	}
	add(filepath.Join(".cache", "engines"), "working folder")
	if l.exe != "" {
		bin := filepath.Dir(l.exe)
		add(filepath.Join(bin, "engines"), "beside the binary")
		add(filepath.Join(bin, "..", "share", "handset", "engines"), "beside the binary")
		add(filepath.Join(bin, "..", ".cache", "engines"), "beside the binary")
	}
	// XDG: a relative XDG_DATA_HOME is invalid and ignored.
	if d := l.getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		add(filepath.Join(d, "handset", "engines"), "XDG_DATA_HOME")
	} else if h := l.getenv("HOME"); h != "" {
		add(filepath.Join(h, ".local", "share", "handset", "engines"), "XDG data folder")
	}
	add("/usr/local/share/handset/engines", "system")
	add("/usr/share/handset/engines", "system")
	return out
}

// find is the first place holding the file name.
func (l engineLookup) find(name string) (string, error) {
	places := l.places()
	for _, p := range places {
		f := filepath.Join(p.Dir, name)
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			return f, nil
		}
	}
	return "", &engineMissingError{name: name, places: places}
}

// engineMissingError names a missing engine file and every place looked.
type engineMissingError struct {
	name   string
	places []enginePlace
}

func (e *engineMissingError) Error() string {
	looked := make([]string, len(e.places))
	for i, p := range e.places {
		looked[i] = p.String()
	}
	return fmt.Sprintf("%s not found in %s: run ./scripts/engines.sh in a checkout, or set HANDSET_ENGINES_DIR",
		e.name, strings.Join(looked, ", "))
}

// engineFile finds the engine file name for this configuration.
func engineFile(cfg *config.Config, name string) (string, error) {
	return systemLookup(cfg).find(name)
}

// engineFileNames are every engine file, in the order reports list them.
var engineFileNames = []string{ortLibFile, sileroModelFile, fvadFile}

// engineFilesReport says where each engine file was found, and every place looked when
// one is missing.
func engineFilesReport(l engineLookup) string {
	var b strings.Builder
	b.WriteString("engine files:\n")
	missing := false
	for _, n := range engineFileNames {
		p, err := l.find(n)
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
