package archtest

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/handset-voice/handset/"

type pkg struct {
	ImportPath string
	Imports    []string
	Doc        string
	Name       string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// rel strips the module prefix: "internal/call".
func rel(path string) string { return strings.TrimPrefix(path, module) }

func under(path, prefix string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }

// providerRoots are the packages whose children implement voice contracts.
var providerRoots = []string{"internal/carrier", "internal/stt", "internal/tts", "internal/agent", "internal/browser"}

// allowed reports whether internal package from may import internal package to.
func allowed(from, to string) bool {
	switch {
	case from == "cmd/handset":
		return to == "internal/cli"
	case under(to, "internal/cli"):
		return false // the composition root: only main imports it
	case under(to, "internal/archtest"):
		return false
	case under(from, "internal/audio"):
		return under(to, "internal/audio")
	case under(from, "internal/clock"):
		return false
	case from == "internal/voice":
		return under(to, "internal/audio")
	case from == "internal/turn":
		return to == "internal/voice"
	case from == "internal/obs":
		return to == "internal/voice"
	case from == "internal/session":
		return to == "internal/voice"
	case under(from, "internal/call"):
		return under(to, "internal/audio") || to == "internal/voice" || to == "internal/turn" ||
			to == "internal/obs" || to == "internal/clock" || to == "internal/store"
	case under(from, "internal/store/sqlite"), under(from, "internal/store/postgres"):
		return to == "internal/store" || to == "internal/voice"
	case under(from, "internal/config"):
		return under(to, "internal/audio")
	case from == "internal/openaiwire":
		return to == "internal/voice"
	}
	for _, root := range providerRoots {
		if !under(from, root) {
			continue
		}
		if under(to, "internal/audio") || to == "internal/voice" || to == "internal/obs" ||
			to == "internal/session" || to == "internal/clock" || to == "internal/carrier/mediastream" ||
			to == "internal/openaiwire" {
			return true
		}
		// the agent runtimes share their HTTP-streaming plumbing
		if root == "internal/agent" && under(to, "internal/agent/httpagent") {
			return true
		}
		// a provider's own subpackages (its test helpers) are fine; siblings are not
		return under(to, from) || (strings.HasSuffix(to, "test") && under(to, root))
	}
	return true // cli, sim, web, doctor, jobs: free to compose
}

func TestImportRules(t *testing.T) {
	for _, p := range listPackages(t) {
		from := rel(p.ImportPath)
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if to := rel(imp); !allowed(from, to) {
				t.Errorf("%s must not import %s (docs/architecture.md, who may import whom)", from, to)
			}
		}
	}
}

func TestRulesCatchWrongArrows(t *testing.T) {
	bad := [][2]string{
		{"internal/call", "internal/stt/deepgram"},
		{"internal/call", "internal/config"},
		{"internal/turn", "internal/obs"},
		{"internal/stt/deepgram", "internal/tts/elevenlabs"},
		{"internal/stt/deepgram", "internal/call"},
		{"internal/audio/vad", "internal/voice"},
		{"internal/sim", "internal/cli"},
		{"cmd/handset", "internal/call"},
		{"internal/store/sqlite", "internal/call"},
		{"internal/stt/deepgram", "internal/agent/httpagent"},
		{"internal/agent/httpagent", "internal/agent/openai"},
	}
	for _, b := range bad {
		if allowed(b[0], b[1]) {
			t.Errorf("rule allows %s -> %s", b[0], b[1])
		}
	}
	good := [][2]string{
		{"internal/call", "internal/turn"},
		{"internal/carrier/twilio", "internal/voice"},
		{"internal/cli", "internal/stt/deepgram"},
		{"internal/sim/fakedeepgram", "internal/audio/g711"},
		{"cmd/handset", "internal/cli"},
		{"internal/agent/hermes", "internal/agent/httpagent"},
	}
	for _, g := range good {
		if !allowed(g[0], g[1]) {
			t.Errorf("rule forbids %s -> %s", g[0], g[1])
		}
	}
}

func TestEveryPackageSaysWhatItOwns(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.Name == "main" && p.Doc == "" {
			t.Errorf("%s: command without a doc comment", rel(p.ImportPath))
			continue
		}
		if len(strings.Fields(p.Doc)) < 5 {
			t.Errorf("%s: package comment missing or too short: %q", rel(p.ImportPath), p.Doc)
		}
	}
}
