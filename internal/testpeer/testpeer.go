// Package testpeer is the one way a test reaches for a peer: something outside the module
// it needs (PostgreSQL, the engine files, recorded speech, the OpenClaw install, Chromium,
// axe-core, espeak-ng, flite: the Peer values below). Handset's tests come in two tiers.
// The fast tier (`go test -short ./...`) needs only Go: a missing peer skips the test with the
// command that installs it, and a slow test skips. The full tier (scripts/test.sh) sets
// HANDSET_TEST_FULL=1, which turns every such skip into a failure, so a peer that went
// missing cannot pass unseen. Import it only from tests and their helpers.
package testpeer

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FullEnv names the variable that marks the full tier; "1" turns it on.
const FullEnv = "HANDSET_TEST_FULL"

// Full reports whether this run is the full tier, where every peer must be present.
func Full() bool { return os.Getenv(FullEnv) == "1" }

// A Peer is something a test needs that Go does not bring, and how to install it.
type Peer struct {
	Name    string // what is missing, in words
	Install string // the command that installs it
}

// The peers the tests use.
var (
	PostgreSQL = Peer{"a PostgreSQL server (" + DatabaseURLEnv + ")",
		"./scripts/postgres.sh; then " + DatabaseURLEnv + "=$(cat .cache/postgres/url)"}
	Engines        = Peer{"the engine files in .cache/engines", "./scripts/engines.sh"}
	Speech         = Peer{"recorded speech (Debian's pocketsphinx-testdata)", "sudo apt-get install pocketsphinx-testdata"}
	SphinxEnUS     = Peer{"the PocketSphinx US English model", "sudo apt-get install pocketsphinx-en-us"}
	OpenClaw       = Peer{"the OpenClaw install in .cache/openclaw", "./scripts/openclaw.sh"}
	BridgeClients  = Peer{"the bridge's npm clients in .cache/bridge-clients (openai, @livekit/agents)", "./scripts/bridge-clients.sh"}
	Chromium       = Peer{"chromium", "sudo apt-get install chromium"}
	AxeCore        = Peer{"axe-core in .cache/axe (the accessibility checker page tests run)", "./scripts/axe.sh"}
	Espeak         = Peer{"espeak-ng", "sudo apt-get install espeak-ng"}
	Flite          = Peer{"flite", "sudo apt-get install flite"}
	Bash           = Peer{"bash", "sudo apt-get install bash"}
	SystemdAnalyze = Peer{"systemd-analyze", "sudo apt-get install systemd"}
	GitCheckout    = Peer{"a git checkout (git, run inside a clone)", "git clone the repository and test there"}
	Sipp           = Peer{"sipp, the scripted SIP caller and answerer (Debian's sip-tester)", "./scripts/sip-peers.sh"}
	Baresip        = Peer{"baresip, a SIP user agent", "./scripts/sip-peers.sh"}
	Kamailio       = Peer{"kamailio, a SIP registrar and proxy", "./scripts/sip-peers.sh"}
)

// DatabaseURLEnv names the PostgreSQL server the tests may create databases on.
const DatabaseURLEnv = "HANDSET_TEST_DATABASE_URL"

// Missing ends t because p is missing (why says how it was found missing): a skip naming
// the command that installs p, or in the full tier a failure.
func Missing(t testing.TB, p Peer, why error) {
	t.Helper()
	msg := fmt.Sprintf("missing peer: %s (%v); install it with: %s", p.Name, why, p.Install)
	if Full() {
		t.Fatalf("%s\n(%s=1: the full tier needs every peer)", msg, FullEnv)
	}
	t.Skip(msg + " (skipped: the fast tier runs without it)")
}

// Slow skips t under -short: it takes longer than the fast tier allows (why says what takes
// the time). A full-tier run with -short is a mistake and fails.
func Slow(t testing.TB, why string) {
	t.Helper()
	if !testing.Short() {
		return
	}
	if Full() {
		t.Fatalf("%s=1 with -short: the full tier runs every test (%s)", FullEnv, why)
	}
	t.Skip("slow, not in -short: " + why)
}

// Program is the path of the program named on PATH that p installs; without one it ends t.
func Program(t testing.TB, name string, p Peer) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(t, p, err)
	}
	return path
}

// File is path when it exists; otherwise p, which installs it, is missing and t ends.
func File(t testing.TB, path string, p Peer) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Missing(t, p, err)
	}
	return path
}

// DatabaseURL is the PostgreSQL server's URL from HANDSET_TEST_DATABASE_URL; unset, it ends t.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(DatabaseURLEnv)
	if u == "" {
		Missing(t, PostgreSQL, fmt.Errorf("%s is not set", DatabaseURLEnv))
	}
	return u
}

// NowhereURL is an http:// root on this machine where nothing listens: a port just given
// up, so a client pointed there is refused at once, as one pointed at a wrong address is.
func NowhereURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// ModuleRoot is the top of the checkout: the nearest directory at or above the working
// directory (a test's is its package's) that holds go.mod. The scripts install peers under
// its .cache.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
