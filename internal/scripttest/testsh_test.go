package scripttest

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// testSandbox is a sandbox for test.sh: a Go that can switch, and stand-ins for the
// scripts that reach beyond the machine (OpenClaw and the bridge's clients from npm, the
// demo's smoke run) and for postgres.sh, whose cluster is a file: .cache/postgres/running.
func testSandbox(t *testing.T) *sandbox {
	s := newSandbox(t)
	s.goVersion("1.22.0", true)
	s.write("scripts/openclaw.sh", "#!/usr/bin/env bash\necho openclaw.sh >>\"$STUB_LOG\"\n", 0o755)
	s.write("scripts/bridge-clients.sh", "#!/usr/bin/env bash\necho bridge-clients.sh >>\"$STUB_LOG\"\n", 0o755)
	s.write("scripts/smoke-demo.sh", "#!/usr/bin/env bash\necho smoke-demo.sh >>\"$STUB_LOG\"\n", 0o755)
	s.write("scripts/postgres.sh", `#!/usr/bin/env bash
cd "$(dirname "$0")/.."
echo "postgres.sh ${1:-start}" >>"$STUB_LOG"
mkdir -p .cache/postgres
case "${1:-start}" in
start) touch .cache/postgres/running; echo postgres://stand-in >.cache/postgres/url; cat .cache/postgres/url ;;
status) [ -e .cache/postgres/running ] ;;
stop) rm -f .cache/postgres/running ;;
esac
`, 0o755)
	return s
}

var (
	stageHeader = regexp.MustCompile(`(?m)^== \[(\d+)/(\d+)\] (.*)$`)
	failedLine  = regexp.MustCompile(`(?m)^== FAILED at stage (\d+)/(\d+): (.*) \(exit status [1-9]\d*\)$`)
	notRunLine  = regexp.MustCompile(`(?m)^   - (.*)$`)
)

// stages are the stage names a run printed as it started them, in order.
func stages(out string) []string {
	var names []string
	for _, m := range stageHeader.FindAllStringSubmatch(out, -1) {
		names = append(names, m[3])
	}
	return names
}

// allStages runs test.sh through and returns every stage's name.
func allStages(t *testing.T) []string {
	t.Helper()
	s := testSandbox(t)
	out, code := s.run("test.sh")
	if code != 0 {
		t.Fatalf("test.sh failed with every stand-in passing (%d):\n%s", code, out)
	}
	names := stages(out)
	if len(names) < 5 {
		t.Fatalf("test.sh printed %d stages:\n%s", len(names), out)
	}
	return names
}

func TestTestShPasses(t *testing.T) {
	s := testSandbox(t)
	out, code := s.run("test.sh")
	if code != 0 {
		t.Fatalf("test.sh failed (%d):\n%s", code, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); lines[len(lines)-1] != "== all tests passed" {
		t.Errorf("the last line is not == all tests passed:\n%s", out)
	}
	log := s.log()
	for _, want := range []string{"go vet ./...", "go vet -tags embedded",
		"go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...", "go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags embedded ./...",
		"go test -race -count=1 -timeout 75m", "smoke-demo.sh", "handset bench", "go test -run ^$ -fuzz ^FuzzP$"} {
		if !slices.ContainsFunc(log, func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("test.sh did not run %q:\n%s", want, strings.Join(log, "\n"))
		}
	}
	for _, l := range log {
		if strings.HasPrefix(l, "go test") && !strings.Contains(l, "[DB=postgres://stand-in]") {
			t.Errorf("%q: not with the private cluster's URL", l)
		}
		// The full tier: a missing peer fails the tests instead of skipping them.
		if strings.HasPrefix(l, "go test") && !strings.Contains(l, "[FULL=1]") {
			t.Errorf("%q: not with HANDSET_TEST_FULL=1", l)
		}
	}
}

// A failing stage ends the run with a non-zero code; the end names it and every stage
// that did not run.
func TestTestShNamesTheFailedStageAndTheOnesThatDidNotRun(t *testing.T) {
	all := allStages(t)
	for _, tc := range []struct {
		fail  string // what fails: STUB_GO_FAIL
		stage string // the stage it fails, by a part of its name
	}{
		{"-timeout 75m", "go test -race"},
		{"vet ./...", "go vet"},                              // the first command of a stage of several
		{"staticcheck@v0.8.2 -tags embedded", "staticcheck"}, // the second command of a stage
		{"-fuzz", "fuzz"},                                    // the last stage, after a retry
	} {
		t.Run(tc.stage, func(t *testing.T) {
			s := testSandbox(t)
			out, code := s.run("test.sh", "STUB_GO_FAIL="+tc.fail)
			if code == 0 {
				t.Fatalf("test.sh passed:\n%s", out)
			}
			if strings.Contains(out, "all tests passed") {
				t.Errorf("says all tests passed:\n%s", out)
			}
			m := failedLine.FindStringSubmatch(out)
			if m == nil || !strings.HasPrefix(m[3], tc.stage) {
				t.Fatalf("no == FAILED at stage line naming %q:\n%s", tc.stage, out)
			}
			i := slices.Index(all, m[3])
			if i < 0 {
				t.Fatalf("failed stage %q is not one of %q", m[3], all)
			}
			var notRun []string
			for _, m := range notRunLine.FindAllStringSubmatch(out, -1) {
				notRun = append(notRun, m[1])
			}
			if !slices.Equal(notRun, all[i+1:]) {
				t.Errorf("stages listed as not run: %q, want %q:\n%s", notRun, all[i+1:], out)
			}
			if i == len(all)-1 && !strings.Contains(out, "every other stage ran") {
				t.Errorf("the last stage failed, but the output does not say every other stage ran:\n%s", out)
			}
			if ran := stages(out); !slices.Equal(ran, all[:i+1]) {
				t.Errorf("stages started: %q, want %q", ran, all[:i+1])
			}
			if tc.stage == "go vet" && slices.ContainsFunc(s.log(), func(l string) bool { return strings.HasPrefix(l, "go vet -tags") }) {
				t.Error("the stage went on after its first command failed")
			}
			// The cluster this run started is stopped, failure or not.
			if first(s.log(), "postgres.sh stop") < 0 {
				t.Errorf("the PostgreSQL cluster the run started was not stopped:\n%s", strings.Join(s.log(), "\n"))
			}
		})
	}
}

// The cluster a run starts is stopped at its end; one that already ran before is left
// running, and the run says how to stop it.
func TestTestShStopsOnlyThePostgreSQLItStarted(t *testing.T) {
	t.Run("started by the run", func(t *testing.T) {
		s := testSandbox(t)
		out, code := s.run("test.sh")
		if code != 0 {
			t.Fatalf("test.sh failed:\n%s", out)
		}
		log := s.log()
		if first(log, "postgres.sh start") < 0 || first(log, "postgres.sh stop") < first(log, "postgres.sh start") {
			t.Errorf("want the cluster started, then stopped:\n%s", strings.Join(log, "\n"))
		}
		if !strings.Contains(out, "stopped the test PostgreSQL cluster this run started") {
			t.Errorf("does not say it stopped the cluster:\n%s", out)
		}
	})
	t.Run("running before", func(t *testing.T) {
		s := testSandbox(t)
		s.write(".cache/postgres/running", "", 0o644)
		out, code := s.run("test.sh")
		if code != 0 {
			t.Fatalf("test.sh failed:\n%s", out)
		}
		if i := first(s.log(), "postgres.sh stop"); i >= 0 {
			t.Errorf("stopped a cluster that ran before:\n%s", strings.Join(s.log(), "\n"))
		}
		if !strings.Contains(out, "./scripts/postgres.sh stop") {
			t.Errorf("does not say how to stop the cluster it left running:\n%s", out)
		}
	})
	t.Run("HANDSET_TEST_DATABASE_URL", func(t *testing.T) {
		s := testSandbox(t)
		out, code := s.run("test.sh", "HANDSET_TEST_DATABASE_URL=postgres://elsewhere")
		if code != 0 {
			t.Fatalf("test.sh failed:\n%s", out)
		}
		log := s.log()
		if i := first(log, "postgres.sh"); i >= 0 {
			t.Errorf("touched the private cluster although a server was given: %q", log[i])
		}
		if i := first(log, "go test -race"); i < 0 || !strings.Contains(log[i], "[DB=postgres://elsewhere]") {
			t.Errorf("the tests did not get the given server:\n%s", strings.Join(log, "\n"))
		}
	})
}

// test.sh checks Go as setup.sh does (CI runs it on a fresh machine): an old Go stops it
// before the test dependencies are installed.
func TestTestShStopsAtOnceWithAnOldGo(t *testing.T) {
	s := testSandbox(t)
	s.goVersion("1.19.8", true)
	out, code := s.run("test.sh")
	if code == 0 {
		t.Fatalf("test.sh passed:\n%s", out)
	}
	if !strings.Contains(out, "is Go 1.19.8: too old") || !strings.Contains(out, "https://go.dev/dl/go"+pinned(t)) {
		t.Errorf("output does not say Go is too old and how to install it:\n%s", out)
	}
	log := s.log()
	if i := first(log, "dpkg-query"); i >= 0 {
		t.Errorf("the test dependencies were installed first:\n%s", strings.Join(log, "\n"))
	}
	if i := first(log, "postgres.sh"); i >= 0 {
		t.Errorf("PostgreSQL was touched:\n%s", strings.Join(log, "\n"))
	}
}

// With a Go from 1.21 on, every go command of the run uses the pinned release, and gofmt
// is that release's (the one on PATH may be older).
func TestTestShUsesThePinnedRelease(t *testing.T) {
	want := pinned(t)
	s := testSandbox(t)
	if out, code := s.run("test.sh"); code != 0 {
		t.Fatalf("test.sh failed:\n%s", out)
	}
	log := s.log()
	for _, l := range log[first(log, "go version [GOTOOLCHAIN=local]")+1:] {
		if strings.HasPrefix(l, "go ") && !strings.Contains(l, "[GOTOOLCHAIN=go"+want+"]") {
			t.Errorf("%q: not with GOTOOLCHAIN=go%s", l, want)
		}
	}
	if first(log, "gofmt (pinned)") < 0 || first(log, "gofmt (PATH)") >= 0 {
		t.Errorf("want the pinned release's gofmt, not the one on PATH:\n%s", strings.Join(log, "\n"))
	}
}
