package scripttest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAxeShLeavesThePinnedCopyAlone(t *testing.T) {
	s := newSandbox(t)
	if out, code := s.run("axe.sh"); code != 0 {
		t.Fatalf("axe.sh failed with the pinned copy in place (%d):\n%s", code, out)
	}
	if log := s.log(); len(log) != 0 {
		t.Errorf("axe.sh called out with the pinned copy in place:\n%s", strings.Join(log, "\n"))
	}
}

func TestAxeShFetchesAgainForAnotherPin(t *testing.T) {
	s := newSandbox(t)
	s.write(".cache/axe/version", "axe-core@4.0.0\n", 0o644)
	out, code := s.run("axe.sh")
	if code == 0 {
		t.Fatalf("axe.sh passed though npm failed:\n%s", out)
	}
	want := "npm pack --silent " + axePin(t, filepath.Join(repoRoot(t), "scripts"))
	if log := s.log(); !slices.Contains(log, want) {
		t.Errorf("axe.sh did not ask npm for the pinned package (%q):\n%s", want, strings.Join(log, "\n"))
	}
}

// A tarball whose sha512 is not the pinned integrity is refused, and the copy in place
// stays as it was.
func TestAxeShRefusesATarballThatDoesNotMatch(t *testing.T) {
	s := newSandbox(t)
	s.write(".cache/axe/version", "axe-core@4.0.0\n", 0o644)
	s.stub("npm", `echo "npm $*" >>"$STUB_LOG"
mkdir -p package && echo "not axe" >package/axe.min.js
tar czf tampered.tgz package && rm -r package
echo tampered.tgz`)
	out, code := s.run("axe.sh")
	if code == 0 || !strings.Contains(out, "integrity mismatch") {
		t.Fatalf("axe.sh accepted a tarball that does not match (%d):\n%s", code, out)
	}
	got, err := os.ReadFile(filepath.Join(s.dir, ".cache", "axe", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "stand-in" {
		t.Errorf("axe.min.js replaced by a tarball that did not match: %q", got)
	}
}
