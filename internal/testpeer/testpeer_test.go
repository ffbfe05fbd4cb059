package testpeer

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// childEnv names what the child process started by the tests below runs; the Child tests
// do nothing without it (they are the child's body, not tests of their own).
const childEnv = "TESTPEER_CHILD"

// pathEnv names the path the child's Program and File look for.
const pathEnv = "TESTPEER_PATH"

var missingForTest = Peer{"the test's imaginary peer", "install-imaginary-peer --now"}

func TestChildMissing(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		return
	}
	Missing(t, missingForTest, errors.New("looked and found nothing"))
	t.Log("reached past Missing")
}

func TestChildSlow(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		return
	}
	Slow(t, "takes an imaginary hour")
	t.Log("ran the slow part")
}

func TestChildProgram(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		return
	}
	t.Log("found at " + Program(t, os.Getenv(pathEnv), missingForTest))
}

func TestChildFile(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		return
	}
	t.Log("found at " + File(t, os.Getenv(pathEnv), missingForTest))
}

func TestChildDatabaseURL(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		return
	}
	t.Log("found at " + DatabaseURL(t))
}

// child runs the test binary's test named test in a process of its own with env added to
// this one's (less the tier variables) and reports its output and whether it passed.
func child(t *testing.T, test string, args []string, env ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^" + test + "$", "-test.v"}, args...)...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != FullEnv && k != DatabaseURLEnv && k != childEnv && k != pathEnv {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %s: %v", test, err)
	}
	return string(out), err == nil
}

// outcome is what a child's -test.v output says of test: PASS, SKIP or FAIL.
func outcome(out, test string) string {
	for _, o := range []string{"PASS", "SKIP", "FAIL"} {
		if strings.Contains(out, "--- "+o+": "+test+" ") {
			return o
		}
	}
	return "none"
}

// HANDSET_TEST_FULL=1 turns a missing peer's skip into a failure; without it (or with
// another value) the test skips. Either way the output names the install command, and
// the test goes no further.
func TestFullTierTurnsAMissingPeerIntoAFailure(t *testing.T) {
	for _, tc := range []struct {
		full string
		want string
	}{{"", "SKIP"}, {"0", "SKIP"}, {"1", "FAIL"}} {
		out, passed := child(t, "TestChildMissing", nil, childEnv+"=1", FullEnv+"="+tc.full)
		if got := outcome(out, "TestChildMissing"); got != tc.want || passed != (tc.want != "FAIL") {
			t.Errorf("%s=%q: %s (process passed: %v), want %s:\n%s", FullEnv, tc.full, got, passed, tc.want, out)
		}
		for _, want := range []string{missingForTest.Name, missingForTest.Install, "looked and found nothing"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s=%q: the output does not say %q:\n%s", FullEnv, tc.full, want, out)
			}
		}
		if strings.Contains(out, "reached past Missing") {
			t.Errorf("%s=%q: the test went on after Missing:\n%s", FullEnv, tc.full, out)
		}
	}
}

// A slow test runs without -short, skips with it, and fails with it in the full tier.
func TestSlowSkipsOnlyUnderShort(t *testing.T) {
	for _, tc := range []struct {
		short bool
		full  string
		want  string
	}{{false, "", "PASS"}, {false, "1", "PASS"}, {true, "", "SKIP"}, {true, "1", "FAIL"}} {
		var args []string
		if tc.short {
			args = []string{"-test.short"}
		}
		out, _ := child(t, "TestChildSlow", args, childEnv+"=1", FullEnv+"="+tc.full)
		if got := outcome(out, "TestChildSlow"); got != tc.want {
			t.Errorf("short %v, %s=%q: %s, want %s:\n%s", tc.short, FullEnv, tc.full, got, tc.want, out)
		}
		if ran := strings.Contains(out, "ran the slow part"); ran != (tc.want == "PASS") {
			t.Errorf("short %v, %s=%q: the slow part ran: %v:\n%s", tc.short, FullEnv, tc.full, ran, out)
		}
	}
}

// Program, File and DatabaseURL hand over what is there, and what is not goes through
// Missing: a skip, or a failure in the full tier.
func TestFindersGoThroughMissing(t *testing.T) {
	present := filepath.Join(t.TempDir(), "present")
	if err := os.WriteFile(present, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(t.TempDir(), "absent")
	for _, tc := range []struct {
		test string
		env  string
		want string // PASS, or what a missing peer gives: SKIP, FAIL in the full tier
	}{
		{"TestChildProgram", pathEnv + "=" + present, "PASS"},
		{"TestChildProgram", pathEnv + "=" + absent, "missing"},
		{"TestChildFile", pathEnv + "=" + present, "PASS"},
		{"TestChildFile", pathEnv + "=" + absent, "missing"},
		{"TestChildDatabaseURL", DatabaseURLEnv + "=postgres://somewhere", "PASS"},
		{"TestChildDatabaseURL", DatabaseURLEnv + "=", "missing"},
	} {
		for _, full := range []string{"", "1"} {
			want := tc.want
			if want == "missing" {
				want = map[string]string{"": "SKIP", "1": "FAIL"}[full]
			}
			out, _ := child(t, tc.test, nil, childEnv+"=1", tc.env, FullEnv+"="+full)
			if got := outcome(out, tc.test); got != want {
				t.Errorf("%s with %s, %s=%q: %s, want %s:\n%s", tc.test, tc.env, FullEnv, full, got, want, out)
			}
			if want == "PASS" && !strings.Contains(out, "found at ") {
				t.Errorf("%s with %s: passed without saying what it found:\n%s", tc.test, tc.env, out)
			}
		}
	}
}

func TestNowhereURLRefusesConnections(t *testing.T) {
	u := NowhereURL(t)
	resp, err := http.Get(u)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s answered %s, want the connection refused", u, resp.Status)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("GET %s: %v, want connection refused", u, err)
	}
}

func TestModuleRoot(t *testing.T) {
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Join(root, "internal", "testpeer") != here {
		t.Errorf("ModuleRoot from %s = %s", here, root)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("ModuleRoot %s: %v", root, err)
	}

	t.Chdir(t.TempDir())
	if root, err := ModuleRoot(); err == nil {
		t.Errorf("ModuleRoot outside any module = %s", root)
	}
}
