// Package registry is the catalogue of providers: every carrier, speech-to-text,
// text-to-speech, agent runtime and voice activity detector this binary can use. Each
// provider's own package describes it (its name, the settings it reads, how it is built,
// its doctor checks and the hints `handset diagnose` gives for it) in one exported value,
// and internal/providers registers them all, one line each. Configuration, doctor,
// diagnose, `handset test` and setup read the catalogue instead of naming providers.
package registry

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/doctor"
)

// Kind is what a provider is for; it is also the setting family that chooses one.
type Kind string

// The kinds of provider.
const (
	KindCarrier Kind = "carrier"
	KindSTT     Kind = "stt"
	KindTTS     Kind = "tts"
	KindAgent   Kind = "agent"
	KindVAD     Kind = "vad"
)

// Settings reads the configuration by setting name: the environment variable the settings
// table (internal/config) names it by. A provider reads its settings through this and never
// sees the configuration's types, so it needs nothing of internal/config.
type Settings interface {
	Value(env string) string // as written (a secret revealed); "" when empty
	Duration(env string) time.Duration
	Int(env string) int
	Bool(env string) bool
	// Source says where a value came from ("environment", ".env", "default", …), for doctor.
	Source(env string) string
}

// About is what every provider says of itself.
type About struct {
	Name  string // the value that chooses it, as in HANDSET_STT=deepgram
	Title string // for people: "Deepgram"
	// Settings are the settings it reads, by environment variable; each is in the settings
	// table and the docs (a test holds every provider to that).
	Settings []string
	Offline  bool  // runs on this machine with no account: the demo's kind of provider
	Hints    Hints // what `handset diagnose` advises when its stage breaks
	// Checks are its doctor checks; nil when it has none.
	Checks func(Probe) []doctor.Check
}

// Info is the provider's About; every kind has it.
func (a About) Info() About { return a }

// Hints are how `handset diagnose` names a provider's settings in its advice.
type Hints struct {
	KeyVar   string // the setting or variable holding its key; "" when it has none
	URLVar   string // the setting holding its address; "" when it has none
	KeyFix   string // what to do when the key is refused
	KeyWhere string // where a key comes from, for setup's list of secrets: "a key from the Deepgram console"
	ModelFix string // what to do when the model, voice or language is refused
	SlowFix  string // what to do when it is slow; "" for the generic advice
	URLHint  string // appended to "check <URLVar>" advice: a provider's own way to be reached
	// TestFix is what `handset test` says to check when the provider fails its round trip
	// with err; nil for the generic advice.
	TestFix func(s Settings, err error) string
	// MishearFix (speech-to-text) is what to check when it answers but mishears the
	// probe phrase; nil for the generic advice.
	MishearFix func(s Settings) string
}

// Fixed is a TestFix that gives the same advice whatever the error.
func Fixed(advice string) func(Settings, error) string {
	return func(Settings, error) string { return advice }
}

// LongTurnFiller ends an agent runtime's SlowFix: while it is slow, the caller can hear
// something.
const LongTurnFiller = " HANDSET_LONG_TURN_MESSAGE fills a long wait."

// Build is what a provider gets when it is built for calls.
type Build struct {
	Settings Settings
	// Choice is the setting that chose it (HANDSET_STT, HANDSET_TTS_FALLBACK, …), for errors.
	Choice string
	Log    *slog.Logger
	// HTTP is the client for the agent runtime (its CA and TLS settings); nil for others.
	HTTP *http.Client
	// EngineFile finds an offline engine's file by name, or says everywhere it looked.
	EngineFile func(name string) (string, error)
	// Memory is the calls' memory of the carrier called name, the one its mounted webhooks
	// write (the call ledger included), so a carrier's control reads what they heard. Nil
	// outside a server (a command that only manages numbers): a carrier then does without.
	Memory func(carrier string) carrier.Memory
}

// Probe is what a provider's doctor checks get.
type Probe struct {
	Settings Settings
	// Section is the report section the checks belong to: stt, tts, agent, vad or carrier.
	Section string
	// Choice is the setting that chose the provider (HANDSET_STT, HANDSET_TTS_FALLBACK, …).
	Choice string
	// HTTP is the client to probe rawURL with (the agent runtime's TLS settings for its URL).
	HTTP       func(rawURL string) *http.Client
	EngineFile func(name string) (string, error)
	Home       string // HOME of the command, for runtimes that keep files there
	Demo       bool   // doctor --demo: checking what `handset demo` needs

	// Environ and WorkDir are the command's environment and folder, for checks that run a
	// runtime's own tool as the user would (`hermes gateway status`, found on its PATH).
	Environ []string
	WorkDir string
	// Dotenv reads a dotenv file as Handset reads its own, for a runtime that keeps its
	// settings in one (Hermes' ~/.hermes/.env): its variables, and what it could not read
	// (the variables are those it could). Nil: such files are not read.
	Dotenv func(path string) (map[string]string, error)
	// PublicURLPlaceholder says HANDSET_PUBLIC_URL is an address reserved for examples, which
	// cannot be Handset's (a carrier's webhook check says so rather than probing it).
	PublicURLPlaceholder bool
}

// Provider is one registered provider of any kind: STT, TTS, Agent, VAD or Carrier.
type Provider interface {
	Kind() Kind
	Info() About
}

var catalogue struct {
	sync.RWMutex
	byKind map[Kind][]Provider
}

// Register adds providers to the catalogue. A second provider of a kind with a name already
// taken, or one without a name, is a programming error and panics.
func Register(ps ...Provider) {
	catalogue.Lock()
	defer catalogue.Unlock()
	if catalogue.byKind == nil {
		catalogue.byKind = map[Kind][]Provider{}
	}
	for _, p := range ps {
		name := p.Info().Name
		if name == "" {
			panic(fmt.Sprintf("registry: a %s provider without a name", p.Kind()))
		}
		if slices.ContainsFunc(catalogue.byKind[p.Kind()], func(q Provider) bool { return q.Info().Name == name }) {
			panic(fmt.Sprintf("registry: two %s providers named %q", p.Kind(), name))
		}
		catalogue.byKind[p.Kind()] = append(catalogue.byKind[p.Kind()], p)
	}
}

// All is every registered provider of type P, in the order they were registered.
func All[P Provider]() []P {
	catalogue.RLock()
	defer catalogue.RUnlock()
	var zero P
	var out []P
	for _, p := range catalogue.byKind[zero.Kind()] {
		out = append(out, p.(P))
	}
	return out
}

// Find is the registered provider of type P called name.
func Find[P Provider](name string) (P, bool) {
	for _, p := range All[P]() {
		if p.Info().Name == name {
			return p, true
		}
	}
	var zero P
	return zero, false
}

// Names are the names of the registered providers of kind k, in registration order.
func Names(k Kind) []string {
	catalogue.RLock()
	defer catalogue.RUnlock()
	var out []string
	for _, p := range catalogue.byKind[k] {
		out = append(out, p.Info().Name)
	}
	return out
}

// OfflineTestFix is the TestFix of the offline engines: whether this binary has them.
const OfflineTestFix = "run `handset version` to see which offline engines this binary has; ./scripts/setup.sh installs them"
