package cli

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/handset-voice/handset/internal/engines"
)

// installTree is a fake binary and engines folder, each file with its own mode.
func installTree(t *testing.T) (root, exe, engineDir string) {
	t.Helper()
	root = t.TempDir()
	exe = filepath.Join(root, "checkout", "bin", "handset")
	engineDir = filepath.Join(root, "checkout", ".cache", "engines")
	files := map[string]fs.FileMode{exe: 0o750, filepath.Join(engineDir, engines.ORTLibFile): 0o755,
		filepath.Join(engineDir, engines.SileroModelFile): 0o640, filepath.Join(engineDir, engines.FVADFile): 0o644}
	for f, mode := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("content of "+filepath.Base(f)), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	return root, exe, engineDir
}

func TestInstallCopies(t *testing.T) {
	root, exe, _ := installTree(t)
	prefix := filepath.Join(root, "prefix")
	// Run from the checkout: the engines come from ./.cache/engines.
	o := installOptions{exe: exe, prefix: prefix, names: engines.FileNames,
		lookup: engines.Lookup{Exe: exe, WorkDir: filepath.Join(root, "checkout"), Getenv: func(string) string { return "" }}}
	var out bytes.Buffer
	if err := install(&out, o); err != nil {
		t.Fatal(err)
	}
	copies := map[string]string{
		filepath.Join(prefix, "bin", "handset"): exe,
	}
	for _, n := range engines.FileNames {
		copies[filepath.Join(prefix, "share", "handset", "engines", n)] = filepath.Join(root, "checkout", ".cache", "engines", n)
	}
	for dst, src := range copies {
		want, _ := os.ReadFile(src)
		got, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q, %v; want a copy of %s", dst, got, err, src)
		}
		ss, _ := os.Stat(src)
		if ds, err := os.Stat(dst); err == nil && ds.Mode() != ss.Mode() {
			t.Errorf("%s: mode %v, want %v as the source", dst, ds.Mode(), ss.Mode())
		}
		if !strings.Contains(out.String(), "copied "+src+" -> "+dst) {
			t.Errorf("output does not say it copied %s:\n%s", dst, out.String())
		}
	}
	// No temporary file is left behind.
	for _, d := range []string{filepath.Join(prefix, "bin"), filepath.Join(prefix, "share", "handset", "engines")} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.Contains(e.Name(), ".tmp-") {
				t.Errorf("left behind: %s", filepath.Join(d, e.Name()))
			}
		}
	}

	// The installed binary, run from anywhere, finds the installed engines, and installing
	// it again onto itself copies nothing.
	installed := filepath.Join(prefix, "bin", "handset")
	elsewhere := engines.Lookup{Exe: installed, WorkDir: t.TempDir(), Getenv: func(string) string { return "" }}
	for _, n := range engines.FileNames {
		if got, err := elsewhere.Find(n); err != nil || got != filepath.Join(prefix, "share", "handset", "engines", n) {
			t.Errorf("installed binary finds %s at %q (%v)", n, got, err)
		}
	}
	out.Reset()
	if err := install(&out, installOptions{exe: installed, prefix: prefix, names: engines.FileNames, lookup: elsewhere}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), "already in place") != 4 || strings.Contains(out.String(), "copied") {
		t.Errorf("reinstalling onto itself:\n%s", out.String())
	}
}

func TestInstallDryRun(t *testing.T) {
	root, exe, engineDir := installTree(t)
	prefix := filepath.Join(root, "prefix")
	var out bytes.Buffer
	err := install(&out, installOptions{exe: exe, prefix: prefix, names: engines.FileNames, dryRun: true,
		lookup: engines.Lookup{Explicit: engineDir, Getenv: os.Getenv}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"would copy " + filepath.Join(engineDir, engines.SileroModelFile) + " -> " + filepath.Join(prefix, "share", "handset", "engines", engines.SileroModelFile) + " (mode 0640)",
		"would copy " + exe + " -> " + filepath.Join(prefix, "bin", "handset") + " (mode 0750)",
		"nothing copied",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(prefix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dry run made %s (%v)", prefix, err)
	}
}

func TestInstallErrors(t *testing.T) {
	root, exe, engineDir := installTree(t)
	prefix := filepath.Join(root, "prefix")

	t.Run("no engines", func(t *testing.T) {
		err := install(&bytes.Buffer{}, installOptions{exe: exe, prefix: prefix, names: engines.FileNames,
			lookup: engines.Lookup{Explicit: t.TempDir(), Getenv: os.Getenv}})
		if err == nil || !strings.Contains(err.Error(), "fvad.wasm not found") || !strings.Contains(err.Error(), "scripts/engines.sh") {
			t.Errorf("err %v, want one naming the missing file and the fix", err)
		}
		if _, err := os.Stat(prefix); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a failed install made %s (%v)", prefix, err)
		}
	})

	t.Run("not writable", func(t *testing.T) {
		o := installOptions{exe: exe, prefix: "/usr/local"}
		err := installWriteError(o, &fs.PathError{Op: "mkdir", Path: "/usr/local/share/handset", Err: syscall.EACCES})
		for _, want := range []string{"permission denied", "sudo " + exe + " install --prefix /usr/local", "--prefix ~/.local"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if os.Geteuid() == 0 {
			return // root writes anywhere
		}
		ro := filepath.Join(root, "readonly")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		err = install(&bytes.Buffer{}, installOptions{exe: exe, prefix: ro, names: engines.FileNames,
			lookup: engines.Lookup{Explicit: engineDir, Getenv: os.Getenv}})
		if err == nil || !strings.Contains(err.Error(), "sudo") {
			t.Errorf("err %v, want one saying to use sudo or another prefix", err)
		}
	})

	t.Run("arguments", func(t *testing.T) {
		var errOut bytes.Buffer
		code := Main(context.Background(), []string{"install", "/opt"}, Env{Stdout: &bytes.Buffer{}, Stderr: &errOut, WorkDir: t.TempDir()})
		if code != 2 || !strings.Contains(errOut.String(), "unexpected arguments: /opt") {
			t.Errorf("exit %d, %s", code, errOut.String())
		}
	})
}

// TestInstallCommandDryRun: the command itself, in process, with a relative prefix.
func TestInstallCommandDryRun(t *testing.T) {
	work := t.TempDir()
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, WorkDir: work, Environ: []string{"HANDSET_ENGINES_DIR=" + repoEngines(t)}}
	if code := Main(context.Background(), []string{"install", "--dry-run", "--prefix", "p"}, env); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if want := " -> " + filepath.Join(work, "p", "share", "handset", "engines", engines.FVADFile); !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}

// TestInstallBuiltBinary: a built binary installs itself and its engines into a prefix; the
// installed copy, run from another folder with no setting, finds them there.
func TestInstallBuiltBinary(t *testing.T) {
	bin := buildForTest(t)
	prefix := filepath.Join(t.TempDir(), "prefix")
	out := runBinary(t, bin, t.TempDir(), []string{"HANDSET_ENGINES_DIR=" + repoEngines(t)}, "install", "--prefix", prefix)
	if !strings.Contains(out, "installed: ") {
		t.Fatalf("install said:\n%s", out)
	}
	installed := filepath.Join(prefix, "bin", "handset")
	engineDir := filepath.Join(prefix, "share", "handset", "engines")
	out = runBinary(t, installed, t.TempDir(), nil, "version")
	for _, want := range []string{
		"webrtc (vad): ready (files in " + engineDir + ")",
		engines.FVADFile + "            " + filepath.Join(engineDir, engines.FVADFile),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("installed binary's version lacks %q:\n%s", want, out)
		}
	}
}
