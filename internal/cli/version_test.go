package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/testpeer"
)

func TestVersionFromBuildInfo(t *testing.T) {
	const rev = "2e53829c1f0b6a4e4b1d9c3c2a7e5f60a1b2c3d4"
	info := func(main string, vcs ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/handset-voice/handset", Version: main}}
		for i := 0; i+1 < len(vcs); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: vcs[i], Value: vcs[i+1]})
		}
		return bi
	}
	stamped := []string{"vcs", "git", "vcs.revision", rev, "vcs.time", "2026-11-25T10:00:00Z", "vcs.modified", "true"}
	for _, c := range []struct {
		name           string
		ldVer, ldRev   string
		bi             *debug.BuildInfo
		wantVer, wantC string
	}{
		{"no build info", "dev", "unknown", nil, "dev", "unknown"},
		{"no vcs stamp", "dev", "unknown", info("(devel)"), "dev", "unknown"},
		{"devel with vcs", "dev", "unknown", info("(devel)", stamped...), "dev-2e53829c", "2e53829c (2026-11-25T10:00:00Z, modified)"},
		{"module version", "dev", "unknown", info("v0.0.0-20261125100000-2e53829c1f0b+dirty", stamped...),
			"v0.0.0-20261125100000-2e53829c1f0b+dirty", "2e53829c (2026-11-25T10:00:00Z, modified)"},
		{"clean tree", "dev", "unknown", info("v1.2.0", "vcs.revision", rev, "vcs.time", "2026-11-25T10:00:00Z", "vcs.modified", "false"),
			"v1.2.0", "2e53829c (2026-11-25T10:00:00Z)"},
		{"revision only", "dev", "unknown", info("", "vcs.revision", rev), "dev-2e53829c", "2e53829c"},
		{"ldflags win", "v0.3.0", "abc123", info("v0.0.0-20261125100000-2e53829c1f0b+dirty", stamped...), "v0.3.0", "abc123"},
		{"ldflags version only", "v0.3.0", "unknown", info("(devel)", stamped...), "v0.3.0", "2e53829c (2026-11-25T10:00:00Z, modified)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ver, commit := describeBuild(c.ldVer, c.ldRev, c.bi)
			if ver != c.wantVer || commit != c.wantC {
				t.Errorf("got %q, %q; want %q, %q", ver, commit, c.wantVer, c.wantC)
			}
		})
	}
}

// buildForTest builds cmd/handset as scripts/setup.sh does (-trimpath), with the VCS stamp
// forced on (a GOFLAGS of -buildvcs=false would otherwise drop it), plus extra flags.
func buildForTest(t *testing.T, extra ...string) string {
	t.Helper()
	testpeer.Slow(t, "builds the binary")
	bin := filepath.Join(t.TempDir(), "handset")
	args := append([]string{"build", "-trimpath", "-buildvcs=true", "-o", bin}, extra...)
	cmd := exec.Command("go", append(args, "../../cmd/handset")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runBinary runs bin with args in dir, with an environment holding nothing of this
// process's but PATH.
func runBinary(t *testing.T, bin, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestVersionBuiltBinary: a real -trimpath build says its commit, from git.
func TestVersionBuiltBinary(t *testing.T) {
	testpeer.Slow(t, "builds the binary")
	if err := exec.Command("git", "rev-parse", "HEAD").Run(); err != nil {
		testpeer.Missing(t, testpeer.GitCheckout, err)
	}
	out := runBinary(t, buildForTest(t), t.TempDir(), nil, "version")
	m := regexp.MustCompile(`(?m)^commit: ([0-9a-f]{8}) \(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ(, modified)?\)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no commit from git in:\n%s", out)
	}
	// The module version is go build's pseudo-version of the same commit (or a tag).
	v := regexp.MustCompile(`(?m)^handset (v\S+)$`).FindStringSubmatch(out)
	pseudo := regexp.MustCompile(`-\d{14}-[0-9a-f]{12}`)
	if v == nil || pseudo.MatchString(v[1]) && !strings.Contains(v[1], "-"+m[1]) {
		t.Errorf("version line does not name commit %s:\n%s", m[1], out)
	}

	// -ldflags -X still overrides both.
	const pkg = "github.com/handset-voice/handset/internal/cli"
	bin := buildForTest(t, "-ldflags", "-X "+pkg+".version=v9.8.7 -X "+pkg+".commit=feedface")
	out = runBinary(t, bin, t.TempDir(), nil, "version")
	if !strings.HasPrefix(out, "handset v9.8.7\ncommit: feedface\n") {
		t.Errorf("ldflags override lost:\n%s", out)
	}
}
