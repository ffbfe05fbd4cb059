package sip

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/carrier/sip/media"
	"github.com/handset-voice/handset/internal/voice"
)

// A call's media can outlive the call engine's part in it: when Handset bridges the caller
// to a transfer's target itself, the leg's Run returns (the agent has left the line) while
// the RTP session and the dialog go on for the bridge. So the leg runs its session behind
// a relay, the sink that hands each frame to the call's sink until a bridge takes it over.
// The session runs on the leg's own goroutine (a call keeps no goroutine to watch it); a
// takeover hands it over to a goroutine of the bridge's.

// handoff is how a bridge takes a leg's media over from the call engine.
type handoff struct {
	relay   relay
	running chan struct{} // closed once runMedia has the session running
	over    chan struct{} // closed when runMedia returned with the media not taken
	taken   atomic.Bool

	mu    sync.Mutex
	taker *takeover // the bridge waiting for the media; guarded by mu
	done  bool      // runMedia's session stopped: no takeover now; guarded by mu
}

func newHandoff() *handoff {
	return &handoff{running: make(chan struct{}), over: make(chan struct{})}
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
	own, stop := context.WithCancel(ctx)
	defer stop()
	stopOnEnd := context.AfterFunc(l.endCtx, stop) // a BYE: the session stops
	defer stopOnEnd()
	close(h.running)
	err = l.media.Run(own, &h.relay)
	h.mu.Lock()
	h.done = true
	req := h.taker
	h.mu.Unlock()
	if errors.Is(err, media.ErrHandedOver) && req != nil {
		h.taken.Store(true)
		h.relay.set(req.sink) // from the next frame on; none reaches the call's sink after
		l.mu.Lock()
		l.sink = req.sink // SIP INFO digits too
		l.mu.Unlock()
		bridgeCtx, stopBridge := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.media.Run(bridgeCtx, &h.relay) }()
		req.answer <- mediaRun{stop: stopBridge, done: done}
		return true, nil
	}
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
	h := l.handoff
	select {
	case <-h.running:
	case <-l.ended:
		return mediaRun{}, errEnded
	case <-ctx.Done():
		return mediaRun{}, ctx.Err()
	}
	req := &takeover{sink: sink, answer: make(chan mediaRun, 1)}
	h.mu.Lock()
	switch {
	case h.done:
		h.mu.Unlock()
		return mediaRun{}, errEnded
	case h.taker != nil:
		h.mu.Unlock()
		return mediaRun{}, errors.New("sip: the call's media is being taken over already")
	}
	h.taker = req
	h.mu.Unlock()
	l.media.HandOver()
	select {
	case run := <-req.answer:
		return run, nil
	case <-h.over: // the session stopped for another reason first
		return mediaRun{}, errEnded
	}
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
