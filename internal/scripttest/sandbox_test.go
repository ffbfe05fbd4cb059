package scripttest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/testpeer"
)

// sandbox is a copy of the checkout's scripts and go.mod in a temporary directory, with
// stand-in commands first on PATH. Each stand-in appends a line to the log.
type sandbox struct {
	t   *testing.T
	dir string // the copied checkout
	bin string // the stand-ins
	env map[string]string
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	testpeer.Program(t, "bash", testpeer.Bash)
	root := repoRoot(t)
	src := os.Getenv("SCRIPTTEST_SCRIPTS")
	if src == "" {
		src = filepath.Join(root, "scripts")
	}
	tmp := t.TempDir()
	s := &sandbox{t: t, dir: filepath.Join(tmp, "checkout"), bin: filepath.Join(tmp, "bin"), env: map[string]string{}}
	for _, d := range []string{s.dir, s.bin, filepath.Join(s.dir, "scripts"), filepath.Join(tmp, "goroot", "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		s.write(filepath.Join("scripts", e.Name()), string(data), info.Mode().Perm())
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	s.write("go.mod", string(gomod), 0o644)

	// The engines' files are there already, so engines.sh needs no npm.
	for _, f := range []string{"libonnxruntime.so", "silero_vad_v5.onnx", "fvad.wasm"} {
		s.write(filepath.Join(".cache", "engines", f), "stand-in", 0o644)
	}
	// So is axe-core, at the version axe.sh pins, so it needs no npm either.
	s.write(filepath.Join(".cache", "axe", "axe.min.js"), "stand-in", 0o644)
	s.write(filepath.Join(".cache", "axe", "version"), axePin(t, src)+"\n", 0o644)
	// Every Debian package counts as installed; sudo just runs the command.
	s.stub("dpkg-query", `echo "dpkg-query $*" >>"$STUB_LOG"; echo "install ok installed"`)
	s.stub("apt-get", `echo "apt-get $*" >>"$STUB_LOG"`)
	s.stub("sudo", `exec "$@"`)
	s.stub("npm", `echo "npm $*" >>"$STUB_LOG"; exit 1`)
	goroot := filepath.Join(tmp, "goroot")
	// gofmt: the pinned release's, in the GOROOT the go stand-in reports, and an older one
	// on PATH.
	s.writeAbs(filepath.Join(goroot, "bin", "gofmt"), "#!/usr/bin/env bash\necho \"gofmt (pinned)\" >>\"$STUB_LOG\"\n", 0o755)
	s.stub("gofmt", `echo "gofmt (PATH)" >>"$STUB_LOG"`)
	// What the go stand-in builds: a handset whose bench reports a complete run.
	handset := filepath.Join(tmp, "handset")
	s.writeAbs(handset, `#!/usr/bin/env bash
echo "handset $*" >>"$STUB_LOG"
[ "$1" != bench ] || echo '"calls_held": 50'
echo "handset stand-in"
`, 0o755)
	// One package with one fuzz target, which the go stand-in lists.
	s.write(filepath.Join("p", "p_test.go"), "package p\n\nfunc FuzzP(f *testing.F) {}\n", 0o644)

	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HANDSET_") || strings.HasPrefix(k, "GO") || k == "FUZZTIME" {
			continue // the caller's settings must not steer the scripts under test
		}
		s.env[k] = v
	}
	s.env["PATH"] = s.bin + string(os.PathListSeparator) + pathWithoutGo(t, tmp)
	s.env["STUB_LOG"] = filepath.Join(tmp, "log")
	s.env["STUB_GOROOT"] = goroot
	s.env["STUB_HANDSET"] = handset
	s.env["GIT_CEILING_DIRECTORIES"] = tmp // the copy is not in a git repository
	return s
}

// axePin is the package scripts/axe.sh in src pins (axe-core@4.x.y), as it writes it to
// .cache/axe/version.
func axePin(t *testing.T, src string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(src, "axe.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^SPEC=(\S+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("scripts/axe.sh pins no SPEC=")
	}
	return string(m[1])
}

// pathWithoutGo is $PATH with no go or gofmt on it: a directory that holds one is replaced
// by a directory of links to everything else in it.
func pathWithoutGo(t *testing.T, tmp string) string {
	t.Helper()
	var dirs []string
	for i, d := range filepath.SplitList(os.Getenv("PATH")) {
		if !hasGo(d) {
			dirs = append(dirs, d)
			continue
		}
		shadow := filepath.Join(tmp, "path", strconv.Itoa(i))
		if err := os.MkdirAll(shadow, 0o755); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.Name() == "go" || e.Name() == "gofmt" {
				continue
			}
			if err := os.Symlink(filepath.Join(d, e.Name()), filepath.Join(shadow, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, shadow)
	}
	return strings.Join(dirs, string(os.PathListSeparator))
}

func hasGo(dir string) bool {
	for _, name := range []string{"go", "gofmt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

func (s *sandbox) write(rel, content string, mode os.FileMode) {
	s.writeAbs(filepath.Join(s.dir, rel), content, mode)
}

func (s *sandbox) writeAbs(path, content string, mode os.FileMode) {
	s.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		s.t.Fatal(err)
	}
}

// stub puts a bash command named name first on PATH.
func (s *sandbox) stub(name, body string) {
	s.writeAbs(filepath.Join(s.bin, name), "#!/usr/bin/env bash\n"+body+"\n", 0o755)
}

// goStub is a stand-in for the go command of release version. A Go from 1.21 on runs the
// release GOTOOLCHAIN names, as the real one does after fetching it, unless fetch is false
// (the module proxy cannot be reached). STUB_GO_FAIL makes the commands containing it fail.
// It logs each call as: go ARGS [GOTOOLCHAIN=...] [DB=$HANDSET_TEST_DATABASE_URL]
// [FULL=$HANDSET_TEST_FULL].
const goStub = `
echo "go $* [GOTOOLCHAIN=${GOTOOLCHAIN-}] [DB=${HANDSET_TEST_DATABASE_URL-}] [FULL=${HANDSET_TEST_FULL-}]" >>"$STUB_LOG"
v=@VERSION@
case "${GOTOOLCHAIN:-}" in
go1.*)
	if [ "$(echo "$v" | cut -d. -f2)" -ge 21 ]; then
		if [ @FETCH@ = no ]; then
			echo "go: download ${GOTOOLCHAIN} for linux/amd64: toolchain not available" >&2
			exit 1
		fi
		if [ ! -e "$STUB_LOG.fetched" ]; then
			echo "go: downloading $GOTOOLCHAIN (linux/amd64)" >&2 # as the real one does, once
			touch "$STUB_LOG.fetched"
		fi
		v=${GOTOOLCHAIN#go}
	fi
	;;
esac
if [ -n "${STUB_GO_FAIL:-}" ]; then
	case "$*" in *"$STUB_GO_FAIL"*) echo "stub go: $* fails" >&2; exit 1 ;; esac
fi
case "$1" in
version) echo "go version go$v linux/amd64" ;;
env) [ "$2" = GOROOT ] && echo "$STUB_GOROOT" ;;
build)
	while [ $# -gt 0 ] && [ "$1" != -o ]; do shift; done
	mkdir -p "$(dirname "$2")"
	cp "$STUB_HANDSET" "$2"
	;;
list)
	if [ "$2" = -f ]; then echo "$PWD/p"; else echo example.com/p; fi
	;;
esac
exit 0
`

func (s *sandbox) goVersion(version string, fetch bool) {
	f := "yes"
	if !fetch {
		f = "no"
	}
	s.stub("go", strings.NewReplacer("@VERSION@", version, "@FETCH@", f).Replace(goStub))
}

// run runs a script of the copy; it returns its output and exit code.
func (s *sandbox) run(script string, env ...string) (string, int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(s.dir, "scripts", script))
	cmd.Dir = s.dir
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		s.t.Fatalf("%s: %v", script, err)
	}
	if ctx.Err() != nil {
		s.t.Fatalf("%s did not finish in time:\n%s", script, out)
	}
	return string(out), code
}

// log is what the stand-ins were asked to do, one line a call.
func (s *sandbox) log() []string {
	s.t.Helper()
	data, err := os.ReadFile(s.env["STUB_LOG"])
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// first is the index of the first log line that starts with prefix, or -1.
func first(log []string, prefix string) int {
	for i, l := range log {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// pinned is the Go release go.mod pins (its toolchain line, else its go line).
func pinned(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^toolchain\s+go(\S+)`).FindSubmatch(data); m != nil {
		return string(m[1])
	}
	m := regexp.MustCompile(`(?m)^go\s+(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	v := string(m[1])
	if strings.Count(v, ".") == 1 {
		v += ".0"
	}
	return v
}
