package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/handset-voice/handset/internal/audio/vad/silero"
	"github.com/handset-voice/handset/internal/engines"
)

// installStep is one file handset install copies.
type installStep struct {
	src, dst string
	mode     fs.FileMode
}

// installOptions are what install works from; runInstall fills them from the process.
type installOptions struct {
	exe    string         // the binary to install
	prefix string         // absolute
	lookup engines.Lookup // finds the engine files the binary uses
	names  []string       // which engine files to copy
	dryRun bool
}

func runInstall(_ context.Context, env Env, args []string) error {
	fs, g := newFlagSet("install", env)
	prefix := fs.String("prefix", "/usr/local", "install under `DIR`: DIR/bin/handset and DIR/share/handset/engines")
	dryRun := fs.Bool("dry-run", false, "list what would be copied, and copy nothing")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{msg: "unexpected arguments: " + strings.Join(fs.Args(), " "), hint: "run `handset install --help`"}
	}
	cfg, err := loadConfig(env, g, nil)
	if err != nil {
		return err
	}
	warnSettings(newLogger(env.Stderr, cfg), cfg)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot tell where this binary is: %w", err)
	}
	p := *prefix
	if !filepath.IsAbs(p) {
		p = filepath.Join(env.WorkDir, p)
	}
	return install(env.Stdout, installOptions{
		exe: exe, prefix: filepath.Clean(p), lookup: engines.SystemLookup(cfg), names: installEngineFiles(), dryRun: *dryRun,
	})
}

// installEngineFiles are the engine files this binary can load: the WebRTC VAD always,
// Silero's only when it is linked in.
func installEngineFiles() []string {
	if silero.Available() {
		return []string{engines.ORTLibFile, engines.SileroModelFile, engines.FVADFile}
	}
	return []string{engines.FVADFile}
}

// planInstall lists the copies: the engine files first, the binary last, so an installed
// binary never runs without its engines.
func planInstall(o installOptions) ([]installStep, error) {
	engineDir := filepath.Join(o.prefix, "share", "handset", "engines")
	var steps []installStep
	var missing []error
	for _, n := range o.names {
		src, err := o.lookup.Find(n)
		if err != nil {
			missing = append(missing, err)
			continue
		}
		steps = append(steps, installStep{src: src, dst: filepath.Join(engineDir, n)})
	}
	if len(missing) > 0 {
		// Installing without them would leave a binary that quietly falls back to the
		// energy VAD.
		return nil, fmt.Errorf("engine files missing, nothing installed: %w", errors.Join(missing...))
	}
	steps = append(steps, installStep{src: o.exe, dst: filepath.Join(o.prefix, "bin", "handset")})
	for i := range steps {
		st, err := os.Stat(steps[i].src)
		if err != nil {
			return nil, err
		}
		steps[i].mode = st.Mode().Perm()
	}
	return steps, nil
}

// install copies the binary and its engine files under o.prefix, or with dryRun only says
// what it would copy.
func install(w io.Writer, o installOptions) error {
	steps, err := planInstall(o)
	if err != nil {
		return err
	}
	for _, s := range steps {
		if o.dryRun {
			fmt.Fprintf(w, "would copy %s -> %s (mode %04o)\n", s.src, s.dst, s.mode)
			continue
		}
		if isSameFile(s.src, s.dst) {
			fmt.Fprintf(w, "already in place: %s\n", s.dst)
			continue
		}
		if err := copyAtomic(s.src, s.dst, s.mode); err != nil {
			return installWriteError(o, err)
		}
		fmt.Fprintf(w, "copied %s -> %s (mode %04o)\n", s.src, s.dst, s.mode)
	}
	bin := filepath.Join(o.prefix, "bin", "handset")
	if o.dryRun {
		fmt.Fprintf(w, "dry run: nothing copied; without --dry-run, %s finds its engine files in %s\n",
			bin, filepath.Join(o.prefix, "share", "handset", "engines"))
		return nil
	}
	fmt.Fprintf(w, "installed: %s finds its engine files in %s from any working folder; `%s version` shows them\n",
		bin, filepath.Join(o.prefix, "share", "handset", "engines"), bin)
	return nil
}

// isSameFile: running the installed binary installs onto itself.
func isSameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// copyAtomic copies src to dst through a temporary file in dst's folder renamed over it,
// so a running or half-copied dst is never seen.
func copyAtomic(src, dst string, mode fs.FileMode) (err error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, in); err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	// Chmod, not the create mode: the umask must not change the source's mode.
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// installWriteError says what to do when the prefix cannot be written.
func installWriteError(o installOptions, err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("%w: %s is not writable by this user; run it as root (sudo %s install --prefix %s), or choose a folder you own (--prefix ~/.local)",
			err, o.prefix, o.exe, o.prefix)
	}
	return err
}
