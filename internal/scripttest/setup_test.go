package scripttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A missing or old Go stops setup.sh at once, before apt, with the commands that install
// the pinned release.
func TestSetupStopsAtOnceWithoutAUsableGo(t *testing.T) {
	want := pinned(t)
	for _, tc := range []struct {
		name    string
		version string // "" for no go on PATH
		says    string
	}{
		{"missing", "", "Go is not installed"},
		{"Debian 12's 1.19", "1.19.8", "is Go 1.19.8: too old"},
		{"1.20", "1.20.14", "is Go 1.20.14: too old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t)
			if tc.version != "" {
				s.goVersion(tc.version, true)
			}
			out, code := s.run("setup.sh")
			if code == 0 {
				t.Fatalf("setup.sh passed:\n%s", out)
			}
			for _, w := range []string{
				tc.says,
				"Go " + want + " (go.mod)",
				"https://go.dev/dl/go" + want + ".linux-",
				"tar -C /usr/local -xz",
				"export PATH=/usr/local/go/bin:$PATH",
			} {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			log := s.log()
			if i := first(log, "dpkg-query"); i >= 0 {
				t.Errorf("apt ran before the Go check stopped setup:\n%s", strings.Join(log, "\n"))
			}
			for _, l := range log {
				if strings.HasPrefix(l, "go ") && !strings.HasPrefix(l, "go version ") {
					t.Errorf("setup.sh ran %q with an unusable Go", l)
				}
			}
		})
	}
}

// A Go from 1.21 on gets the release go.mod pins through GOTOOLCHAIN: the check runs
// before apt, the release is fetched after apt (ca-certificates), and every go command
// that builds runs with it.
func TestSetupUsesThePinnedRelease(t *testing.T) {
	want := pinned(t)
	for _, have := range []string{"1.21.0", "1.22.0", want} {
		t.Run(have, func(t *testing.T) {
			s := newSandbox(t)
			s.goVersion(have, true)
			out, code := s.run("setup.sh")
			if code != 0 {
				t.Fatalf("setup.sh failed (%d):\n%s", code, out)
			}
			log := s.log()
			check, apt := first(log, "go version [GOTOOLCHAIN=local]"), first(log, "dpkg-query")
			if check < 0 || apt < 0 || check > apt {
				t.Errorf("the Go check did not run before apt:\n%s", strings.Join(log, "\n"))
			}
			ran := map[string]bool{}
			for _, l := range log[check+1:] {
				if !strings.HasPrefix(l, "go ") {
					continue
				}
				ran[strings.Fields(l)[1]] = true
				if !strings.Contains(l, "[GOTOOLCHAIN=go"+want+"]") {
					t.Errorf("%q: not with GOTOOLCHAIN=go%s", l, want)
				}
			}
			for _, cmd := range []string{"mod", "build"} {
				if !ran[cmd] {
					t.Errorf("setup.sh did not run go %s:\n%s", cmd, strings.Join(log, "\n"))
				}
			}
			if switched := strings.Contains(out, "using Go "+want); switched != (have != want) {
				t.Errorf("says it switches to Go %s: %v, from Go %s:\n%s", want, switched, have, out)
			}
		})
	}
}

// When the pinned release cannot be fetched, setup.sh stops before the engines and the
// build, with Go's reason and the commands that install the release by hand.
func TestSetupStopsWhenThePinnedReleaseCannotBeFetched(t *testing.T) {
	want := pinned(t)
	s := newSandbox(t)
	s.goVersion("1.22.0", false)
	out, code := s.run("setup.sh")
	if code == 0 {
		t.Fatalf("setup.sh passed:\n%s", out)
	}
	for _, w := range []string{"did not give Go " + want, "toolchain not available", "https://go.dev/dl/go" + want} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	for _, l := range s.log() {
		if strings.HasPrefix(l, "go mod") || strings.HasPrefix(l, "go build") {
			t.Errorf("setup.sh went on to %q", l)
		}
	}
}

// go.mod's toolchain line, when there is one, names the release; a two-part go line means
// its first release.
func TestSetupReadsTheReleaseFromGoMod(t *testing.T) {
	for _, tc := range []struct{ gomod, want string }{
		{"module m\n\ngo 1.25.1\n\ntoolchain go1.26.3\n", "go1.26.3"},
		{"module m\n\ngo 1.24\n", "go1.24.0"},
		{"module m\n\ngo 1.26.8 // a comment\n", "go1.26.8"},
	} {
		s := newSandbox(t)
		s.write("go.mod", tc.gomod, 0o644)
		s.goVersion("1.22.0", true)
		if out, code := s.run("setup.sh"); code != 0 {
			t.Fatalf("%q: setup.sh failed:\n%s", tc.gomod, out)
		}
		log := s.log()
		if i := first(log, "go mod download"); i < 0 || !strings.Contains(log[i], "[GOTOOLCHAIN="+tc.want+"]") {
			t.Errorf("%q: want GOTOOLCHAIN=%s:\n%s", tc.gomod, tc.want, strings.Join(log, "\n"))
		}
	}
}

// HANDSET_GOTOOLCHAIN chooses another toolchain, unchecked.
func TestSetupHonoursHANDSET_GOTOOLCHAIN(t *testing.T) {
	s := newSandbox(t)
	s.goVersion("1.22.0", true)
	if out, code := s.run("setup.sh", "HANDSET_GOTOOLCHAIN=local"); code != 0 {
		t.Fatalf("setup.sh failed:\n%s", out)
	}
	log := s.log()
	if i := first(log, "go build"); i < 0 || !strings.Contains(log[i], "[GOTOOLCHAIN=local]") {
		t.Errorf("want go build with GOTOOLCHAIN=local:\n%s", strings.Join(log, "\n"))
	}
}

// The README says which Go to have, and names the release go.mod pins.
func TestREADMESaysWhichGo(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	for _, w := range []string{"Go 1.21 or later", "Go " + pinned(t), "GOTOOLCHAIN=go" + pinned(t)} {
		if !strings.Contains(readme, w) {
			t.Errorf("README.md does not say %q", w)
		}
	}
}
