package sip

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/carrier/sip/dtmfinfo"
	"github.com/handset-voice/handset/internal/carrier/sip/media"
	"github.com/handset-voice/handset/internal/voice"
)

// byeTimeout bounds the BYE Handset sends when it ends a call.
const byeTimeout = 5 * time.Second

// Leg is one SIP call as the call engine drives it: the media session's audio, with the
// dialog's end (a BYE either way) as the call's.
//
// There are no carrier marks in SIP: the media session reports a mark when the audio
// before it has been sent on the RTP clock, which is what the caller heard. Audio the call
// sends before the caller has acknowledged the 200 OK waits for the ACK, so the greeting
// starts when the caller can hear it.
type Leg struct {
	log   *slog.Logger
	media *media.Session
	info  voice.LegInfo
	// bye hangs the dialog up from Handset's side; release forgets the dialog once the
	// call is over.
	bye     func(context.Context) error
	release func()

	answered chan struct{} // closed on the ACK of the 200 OK
	ended    chan struct{} // closed when the dialog ends, by either side
	endOnce  sync.Once
	endErr   error // why, when not a BYE from the caller; set before ended closes

	mu   sync.Mutex
	sink voice.LegSink // set by Run; INFO digits go to it

	signals *signals
	handoff *handoff // how a bridge takes the media over (handoff.go)
}

var _ voice.Leg = (*Leg)(nil)

// legOf is the leg of a call's media and dialog: bye hangs the dialog up, release
// forgets it.
func legOf(log *slog.Logger, m *media.Session, info voice.LegInfo, sig *signals, bye func(context.Context) error, release func()) *Leg {
	return &Leg{log: log, media: m, info: info, signals: sig, bye: bye, release: release,
		answered: make(chan struct{}), ended: make(chan struct{}), handoff: newHandoff()}
}

var _ voice.Reporting = (*Leg)(nil)

var _ voice.SendClocked = (*Leg)(nil)

// ObserveSends reports how late each RTP packet left against the send clock, and whether
// it carried silence because the playout fell behind (an underrun).
func (l *Leg) ObserveSends(f func(late time.Duration, underrun bool)) { l.media.ObserveSends(f) }

// KeepTime sends the RTP the send clock owes now (see voice.SendClocked).
func (l *Leg) KeepTime() { l.media.KeepTime() }

// ReportTo reports the call's signalling, for its journal.
func (l *Leg) ReportTo(report func(voice.LegEvent)) { l.signals.reportTo(report) }

// Info describes the call.
func (l *Leg) Info() voice.LegInfo { return l.info }

// Run carries the call's media until the caller hangs up (nil), the call ends on
// Handset's side (ctx: a BYE is sent, ctx.Err()), or the media fails (a BYE is sent, the
// error).
func (l *Leg) Run(ctx context.Context, sink voice.LegSink) error {
	l.mu.Lock()
	l.sink = sink
	l.mu.Unlock()
	bridged, err := l.runMedia(ctx, sink) // handoff.go: until the dialog or ctx ends, or a bridge takes over
	if bridged {
		return nil // the caller left the agent for a bridge, which owns the dialog now
	}
	defer l.release()
	_ = l.media.Close()
	select {
	case <-l.ended:
		if l.endErr != nil {
			return l.endErr
		}
		return nil // the caller hung up
	default:
	}
	l.hangUp()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// hangUp ends the dialog from Handset's side with a BYE (once established) and marks the
// leg ended.
//
// A call that ends while its 200 OK awaits the ACK waits for it (a BYE may not overtake
// the ACK), as long as the 200 OK is retransmitted at most.
func (l *Leg) hangUp() {
	defer l.end(nil)
	select {
	case <-l.answered:
	case <-l.ended:
		return // never established: answerCall answers the INVITE with a failure
	case <-time.After(ackWait):
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), byeTimeout)
	defer cancel()
	l.signals.signal(time.Now(), "BYE", "out", "handset")
	if err := l.bye(ctx); err != nil {
		l.log.Warn("could not hang up the call (BYE)", "call_id", l.info.CarrierRef, "err", err)
	}
}

// ackWait bounds how long a hang-up waits for the ACK of the 200 OK: 64·T1, the time the
// 200 OK is retransmitted for.
const ackWait = 32 * time.Second

// established opens the way for the call's audio: the caller acknowledged the 200 OK.
func (l *Leg) established() {
	l.signals.signal(time.Now(), "ACK", "in", "")
	if first := l.media.Stats().FirstOut; !first.IsZero() {
		l.signals.note(voice.LegEvent{At: first, Kind: voice.LegFirstOut})
	}
	close(l.answered)
}

// hungUp reports whether the dialog ended on an ordinary hang-up.
func (l *Leg) hungUp() bool {
	select {
	case <-l.ended:
		return l.endErr == nil
	default:
		return false
	}
}

// end marks the dialog over; err says why when it is not an ordinary hang-up.
func (l *Leg) end(err error) {
	l.endOnce.Do(func() {
		l.endErr = err
		close(l.ended)
	})
}

// dtmf reports a key the caller pressed in a SIP INFO request.
func (l *Leg) dtmf(contentType string, body []byte) error {
	digit, err := dtmfinfo.Parse(contentType, body)
	if err != nil {
		return err
	}
	l.mu.Lock()
	sink := l.sink
	l.mu.Unlock()
	if sink != nil {
		sink.DTMF(digit)
	}
	return nil
}

// SendAudio queues audio in the call's codec. Until the caller acknowledged the 200 OK it
// waits, so nothing is played to a caller who cannot hear it yet.
func (l *Leg) SendAudio(ctx context.Context, audio []byte) error {
	if l.bridged() {
		return errEnded
	}
	err := l.waitAnswered(ctx)
	if err == nil {
		err = l.media.SendAudio(ctx, audio)
	}
	return l.unlessHungUp(err)
}

// SendMark asks for the mark back once the audio before it has been sent.
func (l *Leg) SendMark(ctx context.Context, name string) error {
	return l.unlessHungUp(l.media.SendMark(ctx, name))
}

// Clear drops the queued audio at once.
func (l *Leg) Clear(ctx context.Context) error {
	if l.bridged() {
		return nil // the queue carries the bridge's audio now
	}
	return l.unlessHungUp(l.media.Clear(ctx))
}

// unlessHungUp is err, unless the caller has hung up (a BYE, which may even overtake the
// ACK) and closed the media under the call's playout: what it sends then has no one to
// play to, and that is no fault of the media. Run reports the hang-up; an error here
// would race it and end the call as a media failure.
func (l *Leg) unlessHungUp(err error) error {
	if err != nil && l.hungUp() {
		return nil
	}
	return err
}

// errEnded: the call ended before the caller acknowledged the answer.
var errEnded = errors.New("sip: the call ended")

func (l *Leg) waitAnswered(ctx context.Context) error {
	select {
	case <-l.answered:
		return nil
	default:
	}
	select {
	case <-l.answered:
		return nil
	case <-l.ended:
		return errEnded
	case <-ctx.Done():
		return ctx.Err()
	}
}
