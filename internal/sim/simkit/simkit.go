// Package simkit is the catalogue of carrier kits: for each carrier, a wire-faithful fake
// of the vendor (its REST API, signed webhooks and outbound calls) and its simulated
// caller. Whole-call tests, `handset simulate` and `handset bench` pick a kit by the
// carrier's name and drive every carrier the same way. Kits register from
// internal/providers, one line each, as carriers do.
package simkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/sim/phone"
)

// Kit starts one carrier's fake vendor.
type Kit interface {
	// Name is the carrier's registry name ("twilio").
	Name() string
	// Start runs a fresh fake vendor; Close stops it.
	Start(ctx context.Context, opts VendorOptions) (Vendor, error)
}

// VendorOptions shape a fake vendor.
type VendorOptions struct {
	// Secret is the signing secret the vendor signs with and Handset checks (Twilio: the
	// auth token). Empty generates one; Settings reports it either way. A kit whose
	// signatures are asymmetric (Telnyx) treats it as the seed of its key pair.
	Secret string
	// Numbers are the account's phone numbers (E.164), the ones outbound calls may come
	// from and inbound calls ring; empty gives the kit one.
	Numbers []string
	// Answer decides the outcome of each outbound call the vendor places, by the number
	// dialled; nil answers every call as a person who holds a second and hangs up.
	Answer func(to string) Callee
	// Lean and Echo apply to every simulated caller the vendor connects (see phone.Options).
	Lean bool
	Echo *phone.EchoOptions
	// Silent callers start their streams and send no media, as lines whose audio never
	// reaches the carrier (see phone.Options.Silent).
	Silent bool
	// Frame is the audio each media message of the vendor's callers carries, for a
	// carrier that sends other sizes than 20 ms; zero is the carrier's usual.
	Frame time.Duration
	// EarlyFrames, when positive, has every caller send that many media frames of silence
	// and then a key press "1" before the stream's start message, as a carrier that does
	// not order its events may.
	//
	// A kit whose carrier never does what Frame or EarlyFrames ask refuses them: Start
	// returns an error wrapping ErrUnsupported.
	EarlyFrames int
	// HTTPClient is how the vendor reaches Handset; default http.DefaultClient. A kit
	// accepts a ws:// stream URL, since the Handset it serves listens on plain http.
	HTTPClient *http.Client
	Clock      clock.Clock  // default the wall clock
	Logger     *slog.Logger // default discards
}

// Outcome is how a callee answers an outbound call.
type Outcome string

// Outcomes a callee can have. The zero Outcome is Person.
const (
	Person    Outcome = "person"
	Machine   Outcome = "machine"   // an answering machine; detection says so at once
	Voicemail Outcome = "voicemail" // an answering machine whose greeting ends in a beep
	Busy      Outcome = "busy"
	Nobody    Outcome = "no-answer"
	Failed    Outcome = "failed"
)

// Callee is what the far end of an outbound call does.
type Callee struct {
	Outcome Outcome
	// RingFor is how long the phone rings before the outcome; zero takes the kit's
	// default (a short ring).
	RingFor time.Duration
	// Hold is how long an answered callee stays on the line when Talk is nil; zero
	// takes the kit's default.
	Hold time.Duration
	// Talk, when set, is the answered callee: the call lasts until it returns (then the
	// callee hangs up) or Handset ends it. An error is recorded by the vendor.
	Talk func(ctx context.Context, p phone.Phone) error
}

// CallOptions describe one inbound call.
type CallOptions struct {
	From, To string // E.164; empty takes the kit's defaults
	// PublicURL is the base URL Handset believes the vendor reaches it by (its public
	// URL), which signatures cover; empty means handsetURL.
	PublicURL string
	// Ref is the carrier's id for the call; empty generates one.
	Ref string
	// Withheld is a caller who withheld their number, shown as the carrier shows one;
	// From is then ignored.
	Withheld bool
	// Attestation is the STIR/SHAKEN attestation the carrier gives From: "A", "B" or "C";
	// empty for none. The kit carries it as its carrier does (Twilio: StirVerstat).
	Attestation string
	// Params are carrier-specific extras for the webhook (Twilio: form parameters such as
	// StirVerstat); a kit ignores names it does not know.
	Params map[string]string
	// Lean and Echo override VendorOptions for this call when set.
	Lean bool
	Echo *phone.EchoOptions
}

// Vendor is one running fake vendor.
type Vendor interface {
	// Settings are the KEY=VALUE lines Handset needs to use this vendor with publicURL as
	// its public URL: credentials, the vendor's API URL, the keys signatures are checked
	// with.
	Settings(publicURL string) []string
	// Secret is the signing secret in use (VendorOptions.Secret, or the generated one).
	Secret() string
	// Call places an inbound call into Handset at handsetURL (reached directly; Handset's
	// public URL is the one given to Settings): the vendor's signed webhook(s), Handset's
	// answer, then the media stream, returned open.
	Call(ctx context.Context, handsetURL string, c CallOptions) (phone.Phone, error)
	// Forgeries are the bad requests Handset must refuse, each with the status it must
	// get: unsigned, wrong key, tampered body, stale, stream without a token, with another
	// call's, with a used one. They run against handsetURL.
	Forgeries(handsetURL string) []Forgery
	// Replay places a call, hangs it up, then sends its first webhook again, as an
	// attacker who recorded it would. It returns nil when Handset refused the replay as
	// the carrier's rules require (Twilio: 409; a carrier whose webhooks are events may
	// acknowledge the repeat with 200 but must not answer the call again), else an error
	// saying what Handset did.
	Replay(ctx context.Context, handsetURL string) error
	// Calls are the outbound calls Handset placed through the vendor, in order.
	Calls() []OutboundCall
	// WaitCall waits until the vendor holds at least n outbound calls and returns the nth
	// (from 1) as it stands.
	WaitCall(ctx context.Context, n int) (OutboundCall, error)
	// Close stops the vendor and the calls it connected.
	Close() error
}

// ErrUnsupported is what Start wraps when VendorOptions ask for something the carrier
// never does.
var ErrUnsupported = errors.New("the carrier never does this")

// MalformedFramer is a vendor that names the frames of its carrier's media stream Handset
// must drop as malformed, counting each, while the call goes on. Every kit's vendor
// implements it; it is apart from Vendor so a kit written before it still builds.
type MalformedFramer interface {
	// MalformedFrames are text frames for p's stream: at least one that is not JSON, a
	// media message whose payload is not base64, and an event the carrier never sends.
	MalformedFrames(p phone.Phone) []string
}

// ArrivalMeter is a vendor whose callers time the arrival of Handset's audio against the
// schedule the media's own timestamps give (a SIP trunk's RTP): the send clock as the far
// end hears it. The bench reports it beside Handset's own frame lateness.
type ArrivalMeter interface {
	// ArrivalLateness is the qth quantile (0 to 1) of how late each of Handset's audio
	// packets reached the vendor's callers so far, and how many were timed.
	ArrivalLateness(q float64) (late time.Duration, packets int64)
}

// Forgery is one request Handset must refuse.
type Forgery struct {
	Name string
	// Send makes the request (placing any real call it needs first, and ending it) and
	// returns Handset's answer; an error means no answer arrived.
	Send func(ctx context.Context) (Refusal, error)
	// Want is the refusal Handset must give.
	Want Refusal
}

// Refusal is how Handset turned a request down: an HTTP status, or for a stream it let
// upgrade (101), the reason it closed the socket with.
type Refusal struct {
	Status int
	Reason string
}

// Matches reports whether got is the refusal r asks for: the same status, and for an
// upgrade, a close reason containing r's.
func (r Refusal) Matches(got Refusal) bool {
	return got.Status == r.Status && strings.Contains(got.Reason, r.Reason)
}

// OutboundCall is an outbound call as the vendor holds it.
type OutboundCall struct {
	Ref        string
	To, From   string
	Status     string // the vendor-neutral words of carrier.Status: "completed", "busy", …
	AnsweredBy string // "human", "machine", "" when not detected
	// Detection is the answering-machine detection the dial asked the vendor for, in the
	// vendor's words ("" or the vendor's word for none).
	Detection string
	// TransferredTo is where Handset transferred the call, "" if it did not.
	TransferredTo string
	// Phone is the far end's simulated phone once the call is streaming; nil before.
	Phone phone.Phone
}

// DetectionWords is a vendor that knows, in its own words, the answering-machine detection a
// dial must ask for to carry out a machine policy: the oracle the outbound tests hold
// OutboundCall.Detection to.
type DetectionWords interface {
	// DetectionFor is what a dial with policy ("hangup": hang up on a machine; "message":
	// leave the message once its greeting is over) must ask this vendor for.
	DetectionFor(policy string) string
}

var (
	mu   sync.Mutex
	kits []Kit
	// toolOnly marks the kits that the tools offer but All leaves out.
	toolOnly = map[string]bool{}
)

// Register adds a kit to the catalogue. A second kit of the same name panics: the
// catalogue is built once, at program start.
func Register(k Kit) {
	mu.Lock()
	defer mu.Unlock()
	for _, have := range kits {
		if have.Name() == k.Name() {
			panic("simkit: kit " + k.Name() + " registered twice")
		}
	}
	kits = append(kits, k)
}

// RegisterTool adds a kit that `handset simulate` and `handset bench` offer (Find, Names)
// but that the carrier-neutral whole-call scenarios (All) leave out, because its carrier's
// wire cannot carry what they assert: a SIP trunk's RTP has no marks or clears, so its
// simulated caller hears reply ends in the audio (phone.ReplyEnded) instead.
func RegisterTool(k Kit) {
	Register(k)
	mu.Lock()
	toolOnly[k.Name()] = true
	mu.Unlock()
}

// All is every kit registered with Register, in registration order: the carriers the
// whole-call scenarios run over.
func All() []Kit {
	mu.Lock()
	defer mu.Unlock()
	var all []Kit
	for _, k := range kits {
		if !toolOnly[k.Name()] {
			all = append(all, k)
		}
	}
	return all
}

// Names are every registered kit's names (RegisterTool's too), in registration order.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	var names []string
	for _, k := range kits {
		names = append(names, k.Name())
	}
	return names
}

// Find is the kit named name, however registered; the error lists the kits there are.
func Find(name string) (Kit, error) {
	mu.Lock()
	all := slices.Clone(kits)
	mu.Unlock()
	for _, k := range all {
		if k.Name() == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("no simulated carrier %q: want one of %s", name, strings.Join(Names(), ", "))
}
