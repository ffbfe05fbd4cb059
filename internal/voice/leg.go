package voice

import (
	"context"
	"time"

	"github.com/handset-voice/handset/internal/audio"
)

// LegInfo describes a connected call as its carrier reported it.
type LegInfo struct {
	CallID     CallID
	Carrier    string // "twilio", "browser", …
	CarrierRef string // the carrier's own id (Twilio CallSid)
	Direction  Direction
	From, To   string       // raw numbers: only the store may keep them
	Format     audio.Format // what SendAudio takes and LegSink.Audio delivers
	// AnsweredBy is who picked up an outbound call as the carrier's answering-machine
	// detection judged it: "human", "machine_end_beep", …; empty when not detected.
	AnsweredBy string
	// EchoCancelled: the far end takes its own echo out before sending (a browser's
	// microphone capture does), so the call needs no echo path of its own.
	EchoCancelled bool
	// Attestation is how the phone network vouched for From on an inbound call, as the
	// carrier reported it; empty when it said nothing.
	Attestation Attestation
}

// Attestation is the STIR/SHAKEN verification of an inbound caller's number. Only calls
// that crossed the US or Canadian phone network carry one.
type Attestation string

// Attestation levels, strongest first.
const (
	// AttestationA: the originating carrier knows the caller and that the number is theirs.
	AttestationA Attestation = "A"
	// AttestationB: it knows the caller, but not that this number is theirs.
	AttestationB Attestation = "B"
	// AttestationC: it only knows where the call entered its network (a gateway).
	AttestationC Attestation = "C"
	// AttestationNone: the carrier checked and the call carried no verifiable signature.
	AttestationNone Attestation = "none"
	// AttestationFailed: the call carried a signature that did not verify.
	AttestationFailed Attestation = "failed"
)

// Machine reports whether the carrier judged that a recording, not a person, answered.
func (i LegInfo) Machine() bool {
	return len(i.AnsweredBy) >= 7 && i.AnsweredBy[:7] == "machine" || i.AnsweredBy == "fax"
}

// LegSink receives what a leg reads from its carrier. Legs call it from their reader
// goroutine; each method only enqueues and returns quickly.
type LegSink interface {
	// Audio delivers one inbound frame in the leg's Format. The sink copies it.
	Audio(frame []byte)
	// Mark reports that the carrier played everything queued before the named mark
	// (or dropped it on a clear).
	Mark(name string)
	// DTMF reports a key the caller pressed.
	DTMF(digit string)
	// Malformed counts an inbound frame that could not be read and was dropped.
	Malformed(err error)
}

// Leg is one call's media connection to a carrier or a browser.
//
// Run is called once and owns the reader; SendAudio, SendMark and Clear are called from a
// single writer goroutine (the call's playout). Outbound audio may be sent ahead of real
// time: the carrier buffers it, and Clear drops what it has buffered.
type Leg interface {
	Info() LegInfo
	// Run reads the carrier until it hangs up (returns nil) or ctx ends (closes the
	// connection and returns ctx.Err()).
	Run(ctx context.Context, sink LegSink) error
	SendAudio(ctx context.Context, audio []byte) error
	SendMark(ctx context.Context, name string) error
	Clear(ctx context.Context) error
}

// LegEvent is something a leg's carrier did that the call's journal keeps beside the
// call's own events: a SIP trunk's signalling messages, its first packet out.
type LegEvent struct {
	At   time.Time
	Kind LegEventKind
	// Name is the message as on the wire ("INVITE", "180 Ringing", "200 OK", "BYE");
	// Direction "in" or "out"; Reason why a call ended (a BYE's cause), else empty.
	Name, Direction, Reason string
}

// LegEventKind says what a LegEvent is.
type LegEventKind uint8

// Kinds of leg event.
const (
	LegSignal   LegEventKind = iota + 1 // a signalling message
	LegFirstOut                         // the first audio packet left for the caller
)

// SendClocked is a leg that sends audio on a clock of its own (a SIP trunk's RTP): the
// call's playout only fills its queue, and the wire's frame timing is the clock's. The
// gateway gives it where to report how late each packet left against its schedule.
type SendClocked interface {
	// ObserveSends has the function told, as each packet leaves, how late it left against
	// the clock and whether it carried silence because the queue ran dry inside a
	// sentence (an underrun: the call's playout fell behind).
	ObserveSends(func(late time.Duration, underrun bool))
	// KeepTime sends now whatever the clock owes and has not sent yet. The call's
	// goroutine calls it each time it runs: on a busy core the clock's own goroutine
	// waits in the scheduler's queue behind every call's, and a goroutine that is running
	// anyway keeps the packets on time.
	KeepTime()
}

// Reporting is a leg that reports LegEvents. The gateway tells it where they go when it
// admits the call; the leg then reports what happened before (its INVITE) with the times
// it happened, and everything later as it happens.
type Reporting interface {
	ReportTo(func(LegEvent))
}
