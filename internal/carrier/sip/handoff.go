package sip

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// A call's media can outlive the call engine's part in it: when Handset bridges the caller
// to a transfer's target itself, the leg's Run returns (the agent has left the line) while
// the RTP session and the dialog go on for the bridge. So the leg runs its session behind
// a relay, the sink that hands each frame to the call's sink until a bridge takes it over,
// and on its own goroutine, which the bridge inherits.

// handoff is how a bridge takes a leg's media over from the call engine.
type handoff struct {
	relay    relay
	requests chan takeover // received by runMedia while the call engine runs the media
	over     chan struct{} // closed when runMedia returned with the media not taken
	taken    atomic.Bool
}

func newHandoff() *handoff {
	return &handoff{requests: make(chan takeover), over: make(chan struct{})}
}

// takeover asks for a leg's media; the answer is the session's run, now the bridge's.
type takeover struct {
	sink   voice.LegSink
	answer chan mediaRun
}

// mediaRun is a media session's Run going on for a bridge: stop ends it, done has its
// result once it returned.
type mediaRun struct {
	stop context.CancelFunc
	done <-chan error
}

// runMedia runs the leg's media for the call engine's sink until it ends (its error), the
// dialog ends, ctx ends, or a bridge takes it over (bridged: the session runs on, for the
// bridge, and the dialog stays up).
func (l *Leg) runMedia(ctx context.Context, sink voice.LegSink) (bridged bool, err error) {
	h := l.handoff
	h.relay.set(sink)
	own, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.media.Run(own, &h.relay) }()
	select {
	case err = <-done:
	case <-l.ended: // a BYE: the session stops
		stop()
		err = <-done
	case <-ctx.Done():
		stop()
		err = <-done
	case req := <-h.requests:
		h.taken.Store(true)
		h.relay.set(req.sink) // from the next frame on; none reaches the call's sink after
		l.mu.Lock()
		l.sink = req.sink // SIP INFO digits too
		l.mu.Unlock()
		req.answer <- mediaRun{stop: stop, done: done}
		return true, nil
	}
	stop()
	close(h.over)
	l.logMediaStats()
	return false, err
}

// logMediaStats logs what the call's RTP went through, for whoever asks why a caller was
// not heard: loss, late packets, silence played in their place, jitter buffer restarts.
func (l *Leg) logMediaStats() {
	st := l.media.Stats()
	l.log.Info("RTP media stats", "call_id", l.info.CarrierRef,
		"packets_in", st.PacketsIn, "packets_out", st.PacketsOut, "lost", st.Lost, "late", st.Late,
		"reordered", st.Reordered, "duplicates", st.Duplicates, "strangers", st.Strangers,
		"malformed", st.Malformed, "concealed_frames", st.Concealed, "restarts", st.Resets,
		"jitter", st.Jitter.Round(100*time.Microsecond), "depth_frames", st.Depth,
		"send_underruns", st.Underruns)
}

// takeMedia takes the leg's media over for a bridge whose sink is sink: the call engine's
// Run returns nil (the caller left for the transfer) and the session and dialog are the
// bridge's. It fails when the call ended first.
func (l *Leg) takeMedia(ctx context.Context, sink voice.LegSink) (mediaRun, error) {
	req := takeover{sink: sink, answer: make(chan mediaRun, 1)}
	select {
	case l.handoff.requests <- req:
		return <-req.answer, nil
	case <-l.handoff.over:
	case <-l.ended:
	case <-ctx.Done():
		return mediaRun{}, ctx.Err()
	}
	return mediaRun{}, errEnded
}

// bridged reports whether a bridge took the leg's media: the call engine may send no more.
func (l *Leg) bridged() bool { return l.handoff.taken.Load() }

// relay hands a session's frames to the sink of the moment.
//
// Audio comes from the send clock's beat, which ticks many calls: it must never wait on
// one call. So only Audio holds the lock while delivering (set waits for a frame in
// flight, and none reaches the old sink after set returns); marks, digits and reports of
// malformed packets, which may wait on a call whose event queue is full, take the sink of
// the moment and deliver without it.
type relay struct {
	mu sync.RWMutex
	to voice.LegSink
}

func (r *relay) set(to voice.LegSink) {
	r.mu.Lock()
	r.to = to
	r.mu.Unlock()
}

func (r *relay) current() voice.LegSink {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.to
}

func (r *relay) Audio(frame []byte) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	r.to.Audio(frame)
}

func (r *relay) Mark(name string)    { r.current().Mark(name) }
func (r *relay) DTMF(digit string)   { r.current().DTMF(digit) }
func (r *relay) Malformed(err error) { r.current().Malformed(err) }
