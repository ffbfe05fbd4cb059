// Package carrier is the contract between Handset and a telephone carrier's control API:
// placing an outbound call and following it to its end, hanging up, transferring a live
// call to a person, and the account's phone numbers. Jobs, transfers, number management and
// doctor use a Carrier and never a vendor's types; each carrier (internal/carrier/twilio,
// …) implements it, and internal/carrier/carriertest is the suite every one of them passes.
//
// The media side of a call (the carrier's webhooks and media stream) is each carrier's own:
// it reaches the call engine through voice.Leg, with what the gateway gives it in an
// Inbound (inbound.go).
package carrier

import (
	"context"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// Carrier is one carrier account's control API. Its methods are safe for concurrent use;
// their errors are classified with the Err… values below (errors.Is).
type Carrier interface {
	// Name is the carrier's name as call records and routes use it ("twilio").
	Name() string

	// Dial places an outbound call and returns it as the carrier queued it. The carrier
	// reports its progress to Handset at d.PublicURL and asks there what to do once it is
	// answered.
	Dial(ctx context.Context, d Dial) (Call, error)
	// Call is call ref as the carrier holds it now.
	Call(ctx context.Context, ref string) (Call, error)
	// Hangup ends call ref. A call that has already ended counts as hung up.
	Hangup(ctx context.Context, ref string) error
	// Transfer connects live call ref to the phone number to (E.164), showing callerID
	// (empty: the carrier's default). Handset's part in the call ends with it.
	Transfer(ctx context.Context, ref, to, callerID string) error

	// Account is the account the credentials belong to: the cheapest check that they work.
	Account(ctx context.Context) (Account, error)
	// Numbers lists the account's phone numbers.
	Numbers(ctx context.Context) ([]Number, error)
	// Number is the account's phone number e164 (written loosely is fine, see
	// NormalizeNumber); an error wrapping ErrNotFound when the account has no such number.
	Number(ctx context.Context, e164 string) (Number, error)
	// Attach points number n's incoming calls at voiceURL (method POST) and, when
	// statusURL is set, its call progress at statusURL, clearing whatever would override
	// them; it returns the number as the carrier holds it afterwards.
	Attach(ctx context.Context, n Number, voiceURL, statusURL string) (Number, error)
}

// Dial is one outbound call to place.
type Dial struct {
	// CallID is Handset's id of the call, which the carrier hands back with its progress.
	CallID voice.CallID
	// To and From are phone numbers, in E.164 or written loosely (see NormalizeNumber);
	// From must be one of the account's numbers (or a caller id it may use).
	To, From string
	// PublicURL is where the carrier reaches Handset (HANDSET_PUBLIC_URL).
	PublicURL string
	// OnMachine is what to do when a machine answers; it decides whether and how the
	// carrier runs answering-machine detection. Empty is MachineTalk: no detection.
	OnMachine MachinePolicy
	// RingTimeout is how long the phone may ring before the call ends no-answer; 0 is the
	// carrier's default.
	RingTimeout time.Duration
	// MaxDuration caps the call's length; 0 is the carrier's default.
	MaxDuration time.Duration
}

// MachinePolicy is what an outbound call does when answering-machine detection says a
// recording picked up.
type MachinePolicy string

// Machine policies.
const (
	MachineHangup  MachinePolicy = "hangup"  // hang up at once: no conversation with a recording
	MachineMessage MachinePolicy = "message" // leave the first message after the beep, then hang up
	MachineTalk    MachinePolicy = "talk"    // carry on as with a person
)

// Valid reports whether p is a policy, empty (the configured default) included.
func (p MachinePolicy) Valid() bool {
	switch p {
	case "", MachineHangup, MachineMessage, MachineTalk:
		return true
	}
	return false
}

// Call is an outbound call as the carrier holds it.
type Call struct {
	Ref      string // the carrier's id of the call (a Twilio CallSid)
	To, From string
	Status   Status
	// AnsweredBy is the machine-detection verdict; empty without detection or before
	// the answer.
	AnsweredBy AnsweredBy
	// Duration is how long the call lasted once answered, in whole seconds; 0 until it
	// has ended.
	Duration time.Duration
}

// Status is where a call stands. The final ones are how call records say a call nobody
// talked on ended (busy, no-answer, …).
type Status string

// Call statuses.
const (
	StatusQueued     Status = "queued"      // accepted, not dialled yet
	StatusRinging    Status = "ringing"     // dialled and ringing
	StatusInProgress Status = "in-progress" // answered
	StatusCompleted  Status = "completed"   // answered, then ended
	StatusBusy       Status = "busy"        // the callee was busy
	StatusNoAnswer   Status = "no-answer"   // nobody answered before the ring timeout
	StatusFailed     Status = "failed"      // the carrier could not connect it
	StatusCanceled   Status = "canceled"    // hung up before it was answered
)

// Ended reports whether the status is final.
func (s Status) Ended() bool {
	switch s {
	case StatusCompleted, StatusBusy, StatusNoAnswer, StatusFailed, StatusCanceled:
		return true
	}
	return false
}

// AnsweredBy is who picked up, as answering-machine detection judged it. Carriers map
// their verdicts onto these (Twilio's are the same words).
type AnsweredBy string

// Verdicts.
const (
	AnsweredHuman   AnsweredBy = "human"
	AnsweredMachine AnsweredBy = "machine_start"    // a machine, known as soon as it spoke
	AnsweredBeep    AnsweredBy = "machine_end_beep" // a machine whose greeting ended in a beep
	AnsweredSilence AnsweredBy = "machine_end_silence"
	AnsweredOther   AnsweredBy = "machine_end_other" // a machine whose greeting ended otherwise
	AnsweredFax     AnsweredBy = "fax"
	AnsweredUnknown AnsweredBy = "unknown"
)

// Machine reports whether a recording or a fax picked up.
func (a AnsweredBy) Machine() bool {
	switch a {
	case AnsweredMachine, AnsweredBeep, AnsweredSilence, AnsweredOther, AnsweredFax:
		return true
	}
	return false
}

// Account is the carrier account the credentials belong to.
type Account struct {
	ID     string // the carrier's account id (a Twilio Account SID)
	Name   string // its friendly name
	Status string // active, suspended, closed, … as the carrier words it
	Trial  bool   // a trial account, limited in whom it may call
}

// Number is one of the account's phone numbers and where its calls go.
type Number struct {
	Ref          string // the carrier's id of the number (a Twilio PN… SID)
	PhoneNumber  string // E.164
	FriendlyName string
	VoiceURL     string // where its incoming calls are sent
	VoiceMethod  string // GET or POST
	// Override, when set, names what receives its calls instead of VoiceURL (a Twilio
	// TwiML app), which Attach clears.
	Override       string
	StatusCallback string
}
