package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	pathpkg "path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/handset-voice/handset/"

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Doc          string
	Name         string
}

// buildTags are the builds the rules hold for: the default and the one that links the
// offline engines through cgo (which imports what only it needs).
var buildTags = []string{"", "embedded"}

func listPackages(t *testing.T, tags string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", tags, "-json", module+"...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1") // else the cgo files, and their imports, are left out
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -tags %q: %v", tags, err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
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

// matches reports whether path is named by pattern: a package, "X/..." for X and every
// package under it, or "..." for every package. A "*" in a pattern matches within one
// path element (as path.Match has it), so one rule can name every carrier:
// "internal/carrier/*/..." is every package under any carrier.
func matches(path, pattern string) bool {
	if pattern == "..." {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return globUnder(path, p)
	}
	ok, _ := pathpkg.Match(pattern, path)
	return ok
}

// globUnder reports whether path is a package named by prefix (a pattern) or one under it.
func globUnder(path, prefix string) bool {
	n := strings.Count(prefix, "/") + 1
	elems := strings.Split(path, "/")
	if len(elems) < n {
		return false
	}
	ok, _ := pathpkg.Match(prefix, strings.Join(elems[:n], "/"))
	return ok
}

// specificity orders patterns: an exact package beats X/..., a longer X beats a shorter.
func specificity(pattern string) int {
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return 2 * len(p)
	}
	return 2*len(pattern) + 1
}

// own, in a rule's may list, stands for the importing package's own subpackages (a
// provider's test helpers, say).
const own = "<own subpackages>"

// A rule names what the packages matching from may import of ours; the most specific rule
// that matches a package is its rule. Nothing else is allowed: every package needs a rule
// and every arrow an entry (docs/architecture.md, who may import whom).
type rule struct {
	from string
	may  []string
}

// providerMay is what every provider (carrier, STT, TTS, agent runtime, the browser leg)
// may import: never call, config or a sibling provider. internal/doctor is generic: a
// provider may own its preflight checks.
var providerMay = []string{"internal/audio/...", "internal/voice", "internal/obs", "internal/session",
	"internal/clock", "internal/carrier/mediastream", "internal/openaiwire", "internal/registry",
	"internal/doctor", "internal/netfail", own}

// carrierSims are the carriers' fakes of their vendors, each in its carrier's tree and
// named for it: internal/carrier/telnyx/telnyxsim, internal/carrier/plivo/plivosim.
const carrierSims = "internal/carrier/*/*sim/..."

// simMay is what a fake or a simulated caller may import: never the code it stands in
// front of.
var simMay = []string{"internal/audio/...", "internal/clock", "internal/voice", "internal/sim/..."}

// suiteMay is what a conformance suite may import: the contract and what its tests need
// to stage a peer; never a provider.
var suiteMay = []string{"internal/audio/...", "internal/voice", "internal/voice/voicetest", "internal/sim/...", "internal/testpeer"}

var rules = []rule{
	{"cmd/handset", []string{"internal/cli"}},
	// the command line: it parses, prints and runs the gateway; nothing imports it
	{"internal/cli/...", []string{"internal/..."}},
	// the application, the composition root: it wires everything, and only the command
	// line imports it
	{"internal/gateway/...", []string{"internal/..."}},
	// the offline engines' presence and files, which the gateway and the commands report
	{"internal/engines", []string{"internal/config", "internal/audio/...", "internal/stt/sphinx", "internal/tts/flite"}},
	// why a server did not answer, in words, for doctor and the gateway's start-up
	{"internal/netfail", nil},

	// the core, from the bottom up
	{"internal/clock", nil},
	{"internal/audio/...", []string{"internal/audio/..."}},
	{"internal/audio/vad/vadtest", []string{"internal/audio/...", "internal/testpeer"}},
	// the VAD engines describe themselves to the registry (register.go); the core vad package,
	// which the registry imports, may not
	{"internal/audio/vad/...", []string{"internal/audio/...", "internal/registry", "internal/doctor"}},
	{"internal/audio/vad", []string{"internal/audio/..."}},
	{"internal/voice", []string{"internal/audio/..."}},
	{"internal/turn", []string{"internal/voice"}},
	// obs reads what diagnose advises for an agent runtime from the registry
	{"internal/obs", []string{"internal/voice", "internal/registry"}},
	{"internal/session", []string{"internal/voice"}},
	{"internal/openaiwire", []string{"internal/voice", "internal/registry", "internal/doctor", "internal/netfail"}},
	{"internal/json5", nil},
	{"internal/edge", nil},
	// which Host names the browser-facing pages answer to (DNS rebinding)
	{"internal/hostcheck", nil},
	// config asks the registry for an agent runtime's defaults (address, model, key)
	{"internal/config/...", []string{"internal/audio/...", "internal/registry"}},
	{"internal/doctor", nil},
	// the catalogue of providers, and the one list that registers them all
	{"internal/registry", []string{"internal/audio/...", "internal/voice", "internal/doctor", "internal/carrier"}},
	{"internal/registry/registrytest", []string{"internal/registry"}},
	{"internal/providers", []string{"internal/registry", "internal/carrier/...", "internal/stt/...",
		"internal/tts/...", "internal/agent/...", "internal/audio/vad/...", "internal/doctor",
		"internal/sim/simkit", "internal/sim/twiliokit"}}, // and the carriers' simulator kits
	{"internal/call/...", []string{"internal/audio/...", "internal/voice", "internal/turn", "internal/obs",
		"internal/clock", "internal/store", "internal/recording"}},
	// a call's two-channel recording, read back for playback and waveforms, and its retention
	{"internal/recording", []string{"internal/audio/...", "internal/obs", "internal/store", "internal/voice"}},

	// storage: the contract, its two implementations and the suite both pass
	{"internal/store", []string{"internal/voice"}},
	{"internal/store/sqlite/...", []string{"internal/store", "internal/voice"}},
	{"internal/store/postgres/...", []string{"internal/store", "internal/voice"}},
	{"internal/store/postgres/pgtest", []string{"internal/testpeer"}},
	{"internal/store/storetest", []string{"internal/store", "internal/voice"}},

	// providers
	// the carrier contract, its suite, and every carrier implementing it: a carrier
	// (internal/carrier/twilio, …) is imported only by the wiring, everyone else uses the
	// contract
	{"internal/carrier", []string{"internal/voice"}},
	{"internal/carrier/carriertest", []string{"internal/carrier", "internal/voice"}},
	// what every carrier's media stream shares: carrier-neutral, it names no vendor
	{"internal/carrier/mediastream", []string{"internal/carrier", "internal/voice", "internal/audio/..."}},
	{"internal/carrier/...", append(slices.Clip(providerMay), "internal/carrier")},
	// a carrier's fake of its vendor (internal/carrier/telnyx/telnyxsim): written from the
	// vendor's wire alone, it shares no code with the carrier it fakes (its package, the
	// plumbing carriers share), or the fake would prove nothing
	{carrierSims, append(slices.Clip(simMay), "internal/carrier", own)},
	{"internal/stt/...", providerMay},
	{"internal/tts/...", providerMay},
	{"internal/agent/...", append(slices.Clip(providerMay), "internal/agent/httpagent/...")},
	// the one sibling arrow: OpenClaw's HTTP transport is its gateway's OpenAI-compatible
	// endpoint, which the openai runtime's client speaks
	{"internal/agent/openclaw", append(slices.Clip(providerMay), "internal/agent/httpagent/...", "internal/agent/openai")},
	// the HTTP-streaming plumbing the runtimes share: nothing of a runtime
	{"internal/agent/httpagent/...", append(slices.Clip(providerMay), "internal/agent/httpagent/...")},
	{"internal/browser/...", append(slices.Clip(providerMay), "internal/hostcheck", "internal/edge")},
	// the conformance suites every provider of a contract runs from its tests
	{"internal/stt/stttest", suiteMay},
	{"internal/tts/ttstest", suiteMay},
	{"internal/agent/agenttest", suiteMay},
	{"internal/voice/voicetest", []string{"internal/voice"}},

	// what composes the core and the store
	{"internal/jobs/...", []string{"internal/call", "internal/carrier", "internal/clock", "internal/obs",
		"internal/session", "internal/store", "internal/voice"}},
	{"internal/web/...", []string{"internal/jobs", "internal/obs", "internal/session", "internal/store", "internal/voice", "internal/redact"}},
	// how calls and jobs are shown without the numbers of the people on them (the API's
	// default view, the dashboard's viewer)
	{"internal/redact", []string{"internal/jobs", "internal/store", "internal/voice"}},
	// the operator's pages: the store and journals read through small interfaces
	{"internal/dashboard/...", []string{"internal/obs", "internal/store", "internal/voice", "internal/session",
		"internal/hostcheck", "internal/redact", "internal/edge"}},
	{"internal/bench/...", []string{"internal/obs", "internal/sim/..."}},
	// the agent bridge: an OpenAI-compatible endpoint in front of any runtime, journalling
	// its sessions as calls are
	{"internal/bridge", []string{"internal/obs", "internal/session", "internal/voice"}},
	// each call's journal as an OpenTelemetry trace, and the fake collector its tests send to
	{"internal/tracing", []string{"internal/obs", "internal/tracing/tracingtest"}},
	{"internal/tracing/tracingtest", nil},

	// the fakes and simulated callers tests and bench use
	{"internal/sim/...", simMay},
	{"internal/sim/realopenclaw", []string{"internal/testpeer"}},
	// real SIP software (sipp, baresip, kamailio) started for tests: found through testpeer
	{"internal/sim/sippeer", append(slices.Clip(simMay), "internal/testpeer")},
	// real OpenAI clients from npm (the openai SDK, LiveKit Agents) driving the agent bridge
	{"internal/sim/bridgeclients", append(slices.Clip(simMay), "internal/testpeer")},

	// tests of the repository itself, and the support every test goes through
	{"internal/archtest", nil},
	{"internal/scripttest", nil},
	{"internal/testpeer", nil},
	// pages in headless Chromium, checked by axe-core: for tests only, like testpeer
	{"internal/pagetest", []string{"internal/testpeer"}},
}

// ruleFor is the most specific rule matching package from, if any.
func ruleFor(from string) (rule, bool) {
	best, found := rule{}, false
	for _, r := range rules {
		if matches(from, r.from) && (!found || specificity(r.from) > specificity(best.from)) {
			best, found = r, true
		}
	}
	return best, found
}

// allowed reports whether internal package from may import internal package to.
func allowed(from, to string) bool {
	r, ok := ruleFor(from)
	if !ok || under(to, "internal/archtest") || (under(to, "internal/cli") && from != "cmd/handset") {
		return false
	}
	if under(to, "internal/gateway") && !under(from, "internal/cli") && !under(from, "internal/gateway") {
		return false
	}
	if matches(to, carrierSims) && under(from, carrierImpl(to)) && !matches(from, carrierSims) {
		return false // a carrier's code never leans on its own fake
	}
	return slices.ContainsFunc(r.may, func(p string) bool {
		if p == own {
			return to != from && under(to, from)
		}
		return matches(to, p)
	})
}

// errorOnce reports each message once: both builds mostly share their imports.
func errorOnce(t *testing.T) func(format string, args ...any) {
	seen := map[string]bool{}
	return func(format string, args ...any) {
		t.Helper()
		if msg := fmt.Sprintf(format, args...); !seen[msg] {
			seen[msg] = true
			t.Error(msg)
		}
	}
}

func TestImportRules(t *testing.T) {
	report := errorOnce(t)
	for _, tags := range buildTags {
		for _, p := range listPackages(t, tags) {
			from := rel(p.ImportPath)
			if _, ok := ruleFor(from); !ok {
				report("%s: no rule says what it may import (add one to rules)", from)
				continue
			}
			for _, imp := range p.Imports {
				if !strings.HasPrefix(imp, module) {
					continue
				}
				if to := rel(imp); !allowed(from, to) {
					report("%s must not import %s (docs/architecture.md, who may import whom)", from, to)
				}
			}
		}
	}
}

// mayNameCarrier are the packages that may import a carrier itself: the list that
// registers every provider (the gateway and the command line reach carriers through the
// catalogue), and the simulators of a carrier's callers.
var mayNameCarrier = []string{"internal/providers", "internal/sim", "internal/bench"}

// carrierImpl is the carrier package (internal/carrier/twilio) that path is or is inside;
// "" for the contract, its suite, and everything outside internal/carrier.
func carrierImpl(path string) string {
	rest, ok := strings.CutPrefix(path, "internal/carrier/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	if name == "carriertest" || name == "mediastream" { // the suite, and plumbing carriers share
		return ""
	}
	return "internal/carrier/" + name
}

// TestCarriersOnlyThroughTheWiring: the gateway, jobs, transfers, numbers and doctor use
// the carrier contract and the catalogue; only the list of providers (and the carrier
// itself, and its simulators) names a carrier such as Twilio.
func TestCarriersOnlyThroughTheWiring(t *testing.T) {
	report := errorOnce(t)
	for _, tags := range buildTags {
		for _, p := range listPackages(t, tags) {
			from := rel(p.ImportPath)
			if slices.ContainsFunc(mayNameCarrier, func(w string) bool { return under(from, w) }) {
				continue
			}
			for _, imp := range p.Imports {
				impl := carrierImpl(rel(imp))
				if impl != "" && !under(from, impl) {
					report("%s imports the carrier %s: use internal/carrier's contract, and leave building the carrier to the wiring", from, impl)
				}
			}
		}
	}
}

// A thirdParty rule names the packages that may import a module from outside ours: code
// (in non-test files; their tests may too) and tests (in test files only).
type thirdParty struct {
	module      string
	code, tests []string
}

// thirdParties: every import from outside the standard library and this module needs an
// entry, so a library stays with the package that owns what it is for.
var thirdParties = []thirdParty{
	{"github.com/jackc/pgx/v5", []string{"internal/store/postgres/..."}, nil},
	{"modernc.org/sqlite", []string{"internal/store/sqlite"}, nil},
	{"github.com/coder/websocket", []string{"internal/carrier/*/...", "internal/browser", "internal/stt/deepgram",
		"internal/agent/openclaw", "internal/bridge", "internal/sim/..."}, []string{"internal/cli", "internal/gateway", "internal/edge"}},
	// SIP trunks: signalling and media are the sip carrier's, and its simulated callers'
	{"github.com/emiago/sipgo", []string{"internal/carrier/sip/...", "internal/sim/..."}, nil},
	{"github.com/pion/rtp", []string{"internal/carrier/sip/...", "internal/sim/..."}, nil},
	{"github.com/pion/sdp/v3", []string{"internal/carrier/sip/...", "internal/sim/..."}, nil},
	{"github.com/pion/srtp/v3", []string{"internal/carrier/sip/media", "internal/carrier/sip/sipsim"}, nil},
	{"github.com/tetratelabs/wazero", []string{"internal/audio/vad/webrtc"}, nil},
	{"github.com/yalue/onnxruntime_go", []string{"internal/audio/vad/silero"}, nil},
	{"gonum.org/v1/gonum", []string{"internal/audio/echo"}, nil},
	{"github.com/prometheus/client_golang", []string{"internal/obs"}, nil},
	{"github.com/prometheus/client_model", []string{"internal/bench"}, nil},
	{"github.com/prometheus/common", []string{"internal/bench"}, nil},
	// (hermes: doctor reads ~/.hermes/config.yaml)
	{"go.yaml.in/yaml/v3", []string{"internal/config", "internal/cli", "internal/agent/hermes"}, nil},
	{"golang.org/x/sys", []string{"internal/cli"}, nil},
	{"github.com/google/go-cmp", []string{"internal/store/storetest"}, []string{"..."}},
	{"go.uber.org/goleak", []string{"internal/carrier/carriertest", "internal/stt/stttest", "internal/tts/ttstest",
		"internal/agent/agenttest", "internal/voice/voicetest"}, []string{"..."}},
	{"github.com/chromedp/chromedp", []string{"internal/pagetest"}, []string{"internal/cli", "internal/dashboard", "internal/gateway"}},
	{"go.opentelemetry.io/otel", []string{"internal/tracing"}, nil},
	{"go.opentelemetry.io/proto/otlp", []string{"internal/tracing/tracingtest"}, nil},
	{"google.golang.org/protobuf", []string{"internal/tracing/tracingtest"}, nil},
}

// standard reports whether an import path is the standard library's (no dot in its first
// element) or cgo's "C".
func standard(path string) bool { return !strings.Contains(strings.Split(path, "/")[0], ".") }

// thirdPartyAllowed reports whether package from may import path from another module, in
// its code or (test) only in its tests.
func thirdPartyAllowed(from, path string, test bool) bool {
	for _, tp := range thirdParties {
		if !under(path, tp.module) {
			continue
		}
		may := tp.code
		if test {
			may = append(slices.Clip(may), tp.tests...)
		}
		return slices.ContainsFunc(may, func(p string) bool { return matches(from, p) })
	}
	return false
}

func TestThirdPartyImportRules(t *testing.T) {
	report := errorOnce(t)
	for _, tags := range buildTags {
		for _, p := range listPackages(t, tags) {
			from := rel(p.ImportPath)
			check := func(imports []string, test bool) {
				for _, imp := range imports {
					if standard(imp) || strings.HasPrefix(imp, module) {
						continue
					}
					if !thirdPartyAllowed(from, imp, test) {
						where := "code"
						if test {
							where = "tests"
						}
						report("%s's %s must not import %s: add it to thirdParties if it belongs there", from, where, imp)
					}
				}
			}
			check(p.Imports, false)
			check(p.TestImports, true)
			check(p.XTestImports, true)
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
		{"internal/sim/fakedeepgram", "internal/store"},
		{"cmd/handset", "internal/call"},
		{"internal/store/sqlite", "internal/call"},
		{"internal/stt/deepgram", "internal/agent/httpagent"},
		{"internal/agent/httpagent", "internal/agent/openai"},
		{"internal/store/sqlite", "internal/store/postgres"},
		{"internal/web", "internal/config"},
		{"internal/jobs", "internal/web"},
		{"internal/doctor", "internal/voice"},
		{"internal/call", "internal/testpeer"},
		{"internal/call", "internal/pagetest"},
		{"internal/pagetest", "internal/browser"},
		{"internal/newpackage", "internal/voice"}, // no rule: denied
		{"internal/agent/openclaw", "internal/agent"},
		{"internal/jobs", "internal/carrier/twilio"},
		{"internal/web", "internal/carrier/twilio"},
		{"internal/carrier", "internal/carrier/twilio"},
		{"internal/carrier/carriertest", "internal/carrier/twilio"},
		{"internal/carrier/telnyx", "internal/carrier/twilio"},           // a sibling carrier
		{"internal/carrier/telnyx/telnyxsim", "internal/carrier/telnyx"}, // a fake never imports what it fakes
		{"internal/carrier/twilio", "internal/config"},
		{"internal/agent/hermes", "internal/agent/openai"},
		{"internal/agent/openai", "internal/agent/openclaw"},
		{"internal/agent/openclaw", "internal/config"},
		{"internal/config", "internal/providers"},
		{"internal/jobs", "internal/gateway"},
		{"internal/web", "internal/gateway"},
		{"cmd/handset", "internal/gateway"},
		{"internal/gateway", "internal/cli"},
		{"internal/engines", "internal/gateway"},
		{"internal/engines", "internal/stt/deepgram"},
		{"internal/netfail", "internal/config"},
		{"internal/carrier/plivo", "internal/carrier/twilio"},
		{"internal/carrier/plivo", "internal/carrier/telnyx"},
		{"internal/carrier/telnyx", "internal/carrier/plivo"},
		{"internal/carrier/plivo", "internal/config"},
		{"internal/carrier/plivo", "internal/gateway"},
		{"internal/jobs", "internal/carrier/plivo"},
		{"internal/carrier/telnyx/telnyxsim", "internal/carrier/telnyx"}, // a fake never shares its carrier's code
		{"internal/carrier/plivo/plivosim", "internal/carrier/plivo"},
		{"internal/carrier/plivo/plivosim", "internal/carrier/mediastream"},
		{"internal/carrier/plivo/plivosim", "internal/carrier/twilio"},
		{"internal/carrier/telnyx/telnyxsim/wire", "internal/carrier/telnyx"},
		{"internal/carrier/telnyx", "internal/carrier/telnyx/telnyxsim"}, // nor a carrier its fake
		{"internal/carrier/plivo/plivosim", "internal/registry"},
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
		{"internal/cli", "internal/gateway"},
		{"internal/gateway", "internal/stt/deepgram"},
		{"internal/gateway", "internal/engines"},
		{"internal/cli", "internal/engines"},
		{"internal/sim/fakedeepgram", "internal/audio/g711"},
		{"cmd/handset", "internal/cli"},
		{"internal/agent/hermes", "internal/agent/httpagent"},
		{"internal/stt/deepgram", "internal/stt/deepgram/deepgramtest"},
		{"internal/audio/vad/vadtest", "internal/testpeer"},
		{"internal/jobs", "internal/carrier"},
		{"internal/carrier/twilio", "internal/carrier"},
		{"internal/carrier/twilio", "internal/doctor"},
		{"internal/cli", "internal/carrier/twilio"},
		{"internal/config", "internal/registry"},
		{"internal/agent/openclaw", "internal/agent/openai"},
		{"internal/carrier/plivo", "internal/carrier/mediastream"},
		{"internal/carrier/plivo", "internal/carrier"},
		{"internal/carrier/plivo", "internal/registry"},
		{"internal/carrier/telnyx", "internal/carrier/telnyx/internal"},
		{"internal/carrier/telnyx/telnyxsim", "internal/sim/phone"},
		{"internal/carrier/plivo/plivosim", "internal/audio/g711"},
		{"internal/carrier/plivo/plivosim", "internal/carrier"},
		{"internal/providers", "internal/carrier/plivo"},
		{"internal/providers", "internal/carrier/plivo/plivosim"},
	}
	for _, g := range good {
		if !allowed(g[0], g[1]) {
			t.Errorf("rule forbids %s -> %s", g[0], g[1])
		}
	}
}

func TestThirdPartyRulesCatchWrongImports(t *testing.T) {
	for _, c := range []struct {
		from, path string
		test, want bool
	}{
		{"internal/store/postgres", "github.com/jackc/pgx/v5/pgxpool", false, true},
		{"internal/store/postgres/pgtest", "github.com/jackc/pgx/v5", false, true},
		{"internal/cli", "github.com/jackc/pgx/v5", true, false},
		{"internal/jobs", "github.com/jackc/pgx/v5", false, false},
		{"internal/stt/deepgram", "github.com/coder/websocket", false, true},
		{"internal/carrier/plivo", "github.com/coder/websocket", false, true},
		{"internal/carrier/mediastream", "github.com/coder/websocket", false, true},
		{"internal/carrier/telnyx/telnyxsim", "github.com/coder/websocket", false, true},
		{"internal/carrier", "github.com/coder/websocket", false, false},
		{"internal/tts/elevenlabs", "github.com/coder/websocket", false, false},
		{"internal/edge", "github.com/coder/websocket", false, false},
		{"internal/edge", "github.com/coder/websocket", true, true},
		{"internal/call", "go.uber.org/goleak", true, true},
		{"internal/call", "go.uber.org/goleak", false, false},
		{"internal/cli", "github.com/chromedp/chromedp", false, false},
		{"internal/pagetest", "github.com/chromedp/chromedp", false, true},
		{"internal/browser", "github.com/chromedp/chromedp", false, false},
		{"internal/call", "example.com/unknown", true, false},
	} {
		if got := thirdPartyAllowed(c.from, c.path, c.test); got != c.want {
			t.Errorf("%s (test %v) importing %s: allowed %v, want %v", c.from, c.test, c.path, got, c.want)
		}
	}
}

func TestEveryPackageSaysWhatItOwns(t *testing.T) {
	for _, p := range listPackages(t, "") {
		if p.Name == "main" && p.Doc == "" {
			t.Errorf("%s: command without a doc comment", rel(p.ImportPath))
			continue
		}
		if len(strings.Fields(p.Doc)) < 5 {
			t.Errorf("%s: package comment missing or too short: %q", rel(p.ImportPath), p.Doc)
		}
	}
}
