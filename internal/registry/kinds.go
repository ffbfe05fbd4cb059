package registry

import (
	"net/http"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// STT is a speech-to-text provider (HANDSET_STT, HANDSET_STT_FALLBACK).
type STT struct {
	About
	New func(Build) (voice.Recognizer, error)
}

// TTS is a text-to-speech provider (HANDSET_TTS, HANDSET_TTS_FALLBACK).
type TTS struct {
	About
	New func(Build) (voice.Synthesizer, error)
}

// Agent is an agent runtime (HANDSET_AGENT).
type Agent struct {
	About
	New func(Build) (voice.Agent, error)
	// DefaultURL is the runtime's address when HANDSET_AGENT_URL is empty; nil: none, the
	// setting is required.
	DefaultURL func(Settings) string
	// DefaultModel is HANDSET_AGENT_MODEL when empty; "" when the runtime needs none.
	DefaultModel string
	// KeyVar is the variable read for the key when HANDSET_AGENT_KEY is empty; "" for none.
	KeyVar string
}

// VAD is a voice activity detector (HANDSET_VAD).
type VAD struct {
	About
	// New loads the engine once: a factory of per-call detectors at a sample rate, and how
	// to free the engine at shutdown.
	New func(Build) (detector func(rate int) (vad.Detector, error), release func(), err error)
}

// Carrier is a telephone carrier: the routes its calls come in on, and its control of calls
// and numbers (the carrier contract, internal/carrier) for jobs, transfers and number
// management.
type Carrier struct {
	About
	// Configured reports whether the settings give this carrier an account to use.
	Configured func(Settings) bool
	// Started reports whether any of its account settings is set: a set-up begun, which
	// means calls are meant to come through it, complete or not.
	Started func(Settings) bool
	// AccountSettings name what gives it an account, for messages: "X and Y".
	AccountSettings string
	// PhoneSetup says everything phone calls through it need, for messages: "set X, Y
	// and HANDSET_PUBLIC_URL, then run `handset attach-number`".
	PhoneSetup string
	// New is the carrier's control of calls and numbers, for a configured carrier.
	New func(Build) (carrier.Carrier, error)
	// Mount serves the carrier's webhooks and media streams on mux, handing its calls to
	// the gateway through in. The gateway mounts every carrier, configured or not: a
	// carrier's routes refuse the requests they cannot verify.
	Mount func(mux *http.ServeMux, in carrier.Inbound, s Settings) error
	// Listen starts the carrier's own listeners, for calls that do not come through
	// Handset's HTTP server (a SIP trunk's signalling and media ports), and returns once
	// they listen, so a port that cannot be had fails `serve` at startup. The gateway calls
	// it for a configured carrier only (an unconfigured one opens no port), after Mount,
	// and calls stop once the calls are drained. Nil for a carrier whose calls all come
	// through Mount.
	Listen func(in carrier.Inbound, s Settings) (stop func(), err error)
	// Numbers is what `handset numbers` and `handset attach-number` need of it.
	Numbers Numbers
	// Declares are the settings the carrier brings to the settings table beyond the ones
	// the table already has (a carrier added later needs no edit of internal/config): the
	// configuration reads them from the environment, .env and YAML, documents them and
	// hides its secrets. The names belong in About.Settings too.
	Declares []CarrierSetting
	// RequireTogether are groups of settings meaningless alone: when one of a group is set,
	// the checks the commands that use a carrier run (serve, doctor, test) fail until every
	// other one is, naming the one missing.
	RequireTogether [][]string
}

// SettingKind is how the configuration reads and shows a declared carrier setting.
type SettingKind string

// The kinds of declared carrier setting.
const (
	SettingString SettingKind = "string" // any text
	SettingSecret SettingKind = "secret" // a credential: hidden wherever settings are shown
	SettingURL    SettingKind = "url"    // an absolute http(s) URL
	SettingEnum   SettingKind = "enum"   // one of Allowed
)

// CarrierSetting is one setting a carrier declares (Carrier.Declares).
type CarrierSetting struct {
	Env     string      // its environment variable, the name users set
	YAML    string      // its key under carriers.<carrier name> in handset.yaml, in lower snake case
	Kind    SettingKind // how it is read and shown; "" is SettingString
	Default string      // its value when unset; "" for none
	Allowed []string    // the values an enum accepts
	Help    string      // one line for the settings table and docs/configuration.md
}

// Numbers is what the number commands need of a carrier beyond the contract: where its
// numbers are to send their calls, its errors explained for a person at a terminal, and
// its own words for its account.
type Numbers struct {
	// Webhooks are the routes Mount serves, which a number is pointed at.
	Webhooks carrier.Webhooks
	// Open is the control of the account the settings name, as New is, with errors that
	// say which settings are missing or wrong and where their values are found.
	Open func(Settings) (carrier.Carrier, error)
	// Explain turns a failure of Open's control into an error that says what to do.
	Explain func(s Settings, err error) error
	// AccountID is the account the settings name, as the carrier shows it.
	AccountID func(Settings) string

	Override        string // what overrides a number's voice URL, by the carrier's name for it: "TwiML app"
	Console         string // where the account is managed: "the Twilio console"
	BuyNumbers      string // where a number is bought: "the Twilio console (Phone Numbers > …)"
	SignatureHeader string // the header the carrier signs its requests with
}

// Kind says STT.
func (STT) Kind() Kind { return KindSTT }

// Kind says TTS.
func (TTS) Kind() Kind { return KindTTS }

// Kind says agent.
func (Agent) Kind() Kind { return KindAgent }

// Kind says VAD.
func (VAD) Kind() Kind { return KindVAD }

// Kind says carrier.
func (Carrier) Kind() Kind { return KindCarrier }
