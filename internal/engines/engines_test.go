package engines

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeLookup is a lookup from a temporary tree: working folder T/work, binary
// T/prefix/bin/handset, and the given environment; nothing of the real process.
func fakeLookup(t *testing.T, root string, env map[string]string) Lookup {
	t.Helper()
	return Lookup{
		Getenv:  func(k string) string { return env[k] },
		Exe:     filepath.Join(root, "prefix", "bin", "handset"),
		WorkDir: filepath.Join(root, "work"),
	}
}

func placeDirs(ps []Place) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Dir
	}
	return out
}

func TestEngineLookupOrder(t *testing.T) {
	root := t.TempDir()
	l := fakeLookup(t, root, map[string]string{"XDG_DATA_HOME": filepath.Join(root, "xdg"), "HOME": filepath.Join(root, "home")})
	want := []string{
		filepath.Join(root, "work", ".cache", "engines"),
		filepath.Join(root, "prefix", "bin", "engines"),
		filepath.Join(root, "prefix", "share", "handset", "engines"),
		filepath.Join(root, "prefix", ".cache", "engines"),
		filepath.Join(root, "xdg", "handset", "engines"),
		"/usr/local/share/handset/engines",
		"/usr/share/handset/engines",
	}
	if got := placeDirs(l.places()); !slices.Equal(got, want) {
		t.Fatalf("places:\n got %q\nwant %q", got, want)
	}

	// Each place wins over every later one: fill them from the last writable one up, and
	// the newest copy is the one found.
	writable := want[:5]
	for i := len(writable) - 1; i >= 0; i-- {
		if err := os.MkdirAll(writable[i], 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(writable[i], FVADFile), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := l.Find(FVADFile)
		if err != nil || got != filepath.Join(writable[i], FVADFile) {
			t.Errorf("with copies in places %d-4: found %q (%v), want the one in %s", i, got, err, writable[i])
		}
	}

	// A folder with the file's name is not the file.
	if err := os.MkdirAll(filepath.Join(writable[0], SileroModelFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Find(SileroModelFile); err == nil {
		t.Errorf("found %s, a folder", got)
	}
}

func TestEngineLookupXDG(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	for _, c := range []struct {
		name string
		env  map[string]string
		want string // the XDG place; empty: none
	}{
		{"default", map[string]string{"HOME": home}, filepath.Join(home, ".local", "share", "handset", "engines")},
		{"XDG_DATA_HOME", map[string]string{"HOME": home, "XDG_DATA_HOME": "/data"}, "/data/handset/engines"},
		{"relative XDG_DATA_HOME is ignored", map[string]string{"HOME": home, "XDG_DATA_HOME": "data"}, filepath.Join(home, ".local", "share", "handset", "engines")},
		{"no HOME", map[string]string{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := fakeLookup(t, root, c.env).places()
			var got []string
			for _, p := range ps {
				if strings.HasPrefix(p.Why, "XDG") {
					got = append(got, p.Dir)
				}
			}
			if c.want == "" && len(got) != 0 || c.want != "" && !slices.Equal(got, []string{c.want}) {
				t.Errorf("XDG places %q, want %q", got, c.want)
			}
			if len(ps) != 6+len(got) {
				t.Errorf("places %q: want 6 and the XDG one", placeDirs(ps))
			}
		})
	}
}

// TestEngineLookupSetting: HANDSET_ENGINES_DIR is the only place looked when set, so a
// wrong setting shows rather than being covered by another copy.
func TestEngineLookupSetting(t *testing.T) {
	root := t.TempDir()
	l := fakeLookup(t, root, map[string]string{"HOME": filepath.Join(root, "home")})
	checkout := filepath.Join(root, "work", ".cache", "engines")
	if err := os.MkdirAll(checkout, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, FVADFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	l.Explicit = "mine" // relative to the working folder
	mine := filepath.Join(root, "work", "mine")
	if got := placeDirs(l.places()); !slices.Equal(got, []string{mine}) {
		t.Fatalf("places %q, want only %s", got, mine)
	}
	_, err := l.Find(FVADFile)
	if err == nil {
		t.Fatal("found fvad.wasm outside HANDSET_ENGINES_DIR")
	}
	for _, want := range []string{"fvad.wasm not found", mine + " (HANDSET_ENGINES_DIR)", "scripts/engines.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestEngineFilesReport(t *testing.T) {
	root := t.TempDir()
	l := fakeLookup(t, root, map[string]string{})
	dir := filepath.Join(root, "prefix", "share", "handset", "engines")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FVADFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := FilesReport(l)
	for _, want := range []string{
		filepath.Join(dir, FVADFile),
		ORTLibFile + "    not found",
		"looked in, in order:\n    " + filepath.Join(root, "work", ".cache", "engines") + " (working folder)\n",
		"/usr/share/handset/engines (system)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}

	for _, n := range FileNames {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := FilesReport(l); strings.Contains(got, "looked in") || strings.Contains(got, "not found") {
		t.Errorf("every file is there, yet:\n%s", got)
	}

	e := Engine{Name: "silero", Role: "vad", Linked: true, Files: []string{filepath.Join(dir, ORTLibFile), filepath.Join(dir, SileroModelFile)}}
	if got, want := e.String(), "silero (vad): ready (files in "+dir+")"; got != want {
		t.Errorf("engine line %q, want %q", got, want)
	}
}
