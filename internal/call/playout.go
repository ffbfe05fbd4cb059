package call

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/audio/pace"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

// playout is a call's outbound queue and its single writer to the leg. It sends 20 ms
// frames on a schedule (start + n × 20 ms, a little ahead of real time so carrier jitter
// never starves the caller), sends marks in order between them, and can drop everything
// queued for a turn in one step when the caller barges in.
type playout struct {
	leg     voice.Leg
	clock   clock.Clock
	format  audio.Format
	lead    time.Duration                    // how far ahead of real time audio may go to the carrier
	drain   time.Duration                    // quiet time after a clear before new audio goes out
	onAudio func(turn int, start audioStart) // called from the playout goroutine as a turn's audio starts (see audioStart)
	echo    *echo.Line                       // told every frame sent; nil: not tracked
	pcm     []int16                          // decode buffer for those frames
	// position is where on the inbound timeline audio sent now starts to play.
	position func() int64
	metrics  *obs.Metrics // frame timing; nil: not measured
	recorder Recorder     // told every frame sent and every clear; nil: not recorded
	pair     []byte       // two frames sent as one message (reused)
	frames   *sync.Pool   // where sent and dropped frames go back (see frameBuf)
	// parked is true while run waits for a timer or a wake-up with nothing left to do, and
	// parkedUntil (unix ns; 0: none) is the timer's deadline: tests on a fake clock wait
	// for both before they look. A wake-up clears parked as it is sent, and a deadline the
	// clock has reached means the timer fired, so neither reads as idle before run moves.
	parked      atomic.Bool
	parkedUntil atomic.Int64

	mu       sync.Mutex // guards following
	queue    playQueue  // bounded by the reply text the agent produced
	dropped  int        // items of turns <= dropped are refused: they were cancelled
	clearing bool       // a carrier clear is owed before anything else is sent
	wake     chan struct{}
}

type playItem struct {
	turn   int
	frame  *frameBuf // one 20 ms frame, or nil for a mark
	mark   string
	at     time.Time // when it was queued: a frame cannot be late for a time before it existed
	filler bool      // a frame of the long-turn filler, not of the reply
}

// audioStart says which start of a turn's audio reached the carrier.
type audioStart uint8

const (
	audioReply       audioStart = iota // the turn's first audio, and it is the reply (or a message)
	audioFiller                        // the turn's first audio is the long-turn filler
	audioAfterFiller                   // the reply's first audio, after the filler went first
)

func newPlayout(leg voice.Leg, clk clock.Clock, lead, drain time.Duration, onAudio func(int, audioStart)) *playout {
	f := leg.Info().Format
	return &playout{
		leg: leg, clock: clk, format: f, lead: lead, drain: drain,
		onAudio: onAudio, dropped: -1, wake: make(chan struct{}, 1), frames: framePool(f.FrameBytes()),
	}
}

// newFrame is an empty frame from the pool, to be filled and enqueued.
func (p *playout) newFrame() *frameBuf { return p.frames.Get().(*frameBuf) }

// release gives a frame back to the pool: it has been sent or dropped.
func (p *playout) release(f *frameBuf) {
	if f != nil {
		p.frames.Put(f)
	}
}

// enqueue appends frames and an optional mark for turn; the playout owns the frames from
// now on. It reports false if the turn was cancelled (releasing the frames), so the
// producer can stop.
func (p *playout) enqueue(turn int, frames []*frameBuf, mark string) bool {
	return p.enqueueAudio(turn, frames, mark, false)
}

// enqueueAudio is enqueue for audio that may be the long-turn filler's, which the caller
// hears before the reply: its start is told apart from the reply's.
func (p *playout) enqueueAudio(turn int, frames []*frameBuf, mark string, filler bool) bool {
	now := p.clock.Now()
	p.mu.Lock()
	if turn <= p.dropped {
		p.mu.Unlock()
		for _, f := range frames {
			p.release(f)
		}
		return false
	}
	p.queue.reserve(len(frames) + 1)
	for _, f := range frames {
		p.queue.push(playItem{turn: turn, frame: f, at: now, filler: filler})
	}
	if mark != "" {
		p.queue.push(playItem{turn: turn, mark: mark})
	}
	p.mu.Unlock()
	p.signal()
	return true
}

// drop forgets everything queued for turns up to turn and refuses more of them.
func (p *playout) drop(turn int) {
	p.mu.Lock()
	if turn > p.dropped {
		p.dropped = turn
	}
	p.queue.keep(func(it playItem) bool { return it.turn > p.dropped }, func(it playItem) { p.release(it.frame) })
	p.mu.Unlock()
}

// clearCarrier drops turn locally and has the carrier drop what it has buffered.
func (p *playout) clearCarrier(turn int) {
	p.drop(turn)
	p.mu.Lock()
	p.clearing = true
	p.mu.Unlock()
	p.signal()
}

func (p *playout) signal() {
	p.parked.Store(false)
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// heard tells the echo path about a frame sent to the caller: it plays after what was
// sent before it, or now if the carrier ran dry.
func (p *playout) heard(frame []byte) {
	if p.echo == nil {
		return
	}
	if len(p.pcm) < len(frame) {
		p.pcm = make([]int16, len(frame))
	}
	p.echo.Played(p.position(), decodePCM(p.pcm, frame, p.format.Encoding))
}

// next returns what to do now: clear the carrier, send an item, or wait until a deadline
// (zero until: wait for more to be queued).
func (p *playout) next(now time.Time, pc *pace.Pacer, holdUntil time.Time) (it playItem, clearNow bool, until time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clearing {
		p.clearing = false
		return playItem{}, true, time.Time{}, false
	}
	queued := p.queue.items()
	if len(queued) == 0 {
		return playItem{}, false, time.Time{}, false
	}
	head := queued[0]
	if head.frame != nil {
		if now.Before(holdUntil) {
			return playItem{}, false, holdUntil, false
		}
		if pc.Due(now) == 0 {
			return playItem{}, false, pc.Next(), false
		}
	}
	p.queue.popFront()
	return head, false, time.Time{}, true
}

// follower takes the frame queued right after frame it, if there is one of the same turn
// and kind, so two frames go out in one message: half the socket writes, and the second
// frame is at most one frame ahead of its schedule, inside the lead. The reply's first
// frame never rides with the filler's last, so its start is seen when it is sent.
func (p *playout) follower(it playItem) (*frameBuf, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	queued := p.queue.items()
	if p.clearing || len(queued) == 0 || queued[0].frame == nil || queued[0].turn != it.turn ||
		queued[0].filler != it.filler {
		return nil, false
	}
	f := queued[0].frame
	p.queue.popFront()
	return f, true
}

// run is the playout goroutine: the only writer to the leg.
func (p *playout) run(ctx context.Context) error {
	pc := pace.New(p.clock.Now(), audio.FrameDuration, p.lead)
	// A sender later than the lead has let the carrier run dry, and run restarts the
	// schedule with its lead (see idle below). The pacer's own re-anchoring would instead
	// put the next frame at now with no lead at all, and for a lead above its maximum lag
	// it would do so at every restart.
	pc.SetMaxLag(0)
	var holdUntil time.Time
	lastAudioTurn := -1
	fillerTurn := -1 // the turn whose audio started with the filler, until its reply starts
	idle := true
	timer := p.clock.NewTimer(time.Hour)
	timer.Stop() // armed only while waiting for the schedule
	defer timer.Stop()
	for {
		now := p.clock.Now()
		// Dry once everything sent has played (Next is lead-early, so add the lead back),
		// whether the playout waited for audio or woke up late: what goes next starts a
		// fresh schedule with its lead. Asked before next, whose Due would re-anchor a late
		// schedule at now without the lead, and every reply after the first would then go
		// out at exactly real time, with no margin for one late wake-up.
		idle = idle || !pc.Next().Add(p.lead).After(now)
		it, clearNow, until, ok := p.next(now, pc, holdUntil)
		switch {
		case clearNow:
			if err := p.leg.Clear(ctx); err != nil {
				return err
			}
			if p.echo != nil { // what the carrier still held never plays
				p.echo.Cleared(p.position())
			}
			if p.recorder != nil {
				p.recorder.Cleared(p.clock.Now())
			}
			holdUntil = p.clock.Now().Add(p.drain)
			idle = true
			continue
		case ok && it.frame == nil:
			if err := p.leg.SendMark(ctx, it.mark); err != nil {
				return err
			}
			continue
		case ok:
			if idle {
				pc.Restart(now) // the carrier's buffer ran dry: start a fresh schedule
				idle = false
			}
			// How far behind its place in the schedule, counted from when it was queued if
			// that is later: audio that arrived late from TTS is an underrun, not jitter.
			due := pc.Next()
			if it.at.After(due) {
				due = it.at
			}
			late := now.Sub(due)
			msg, frames := it.frame.b, 1
			next, paired := p.follower(it)
			if paired {
				p.pair = append(append(p.pair[:0], it.frame.b...), next.b...)
				msg, frames = p.pair, 2
			}
			err := p.leg.SendAudio(ctx, msg) // the leg is done with msg when it returns
			if err == nil {
				pc.Sent(frames)
				for range frames {
					p.metrics.FrameSent(late)
				}
				p.heard(it.frame.b)
				if paired {
					p.heard(next.b)
				}
				if p.recorder != nil {
					p.recorder.Agent(now, msg)
				}
			}
			p.release(it.frame)
			p.release(next)
			if err != nil {
				return err
			}
			switch {
			case it.turn > lastAudioTurn && it.filler:
				lastAudioTurn, fillerTurn = it.turn, it.turn
				p.onAudio(it.turn, audioFiller)
			case it.turn > lastAudioTurn:
				lastAudioTurn = it.turn
				p.onAudio(it.turn, audioReply)
			case it.turn == fillerTurn && !it.filler:
				fillerTurn = -1
				p.onAudio(it.turn, audioAfterFiller)
			}
			continue
		}
		if until.IsZero() { // nothing queued: sleep until enqueue or clear
			p.parkedUntil.Store(0)
			p.parked.Store(true)
			select {
			case <-ctx.Done():
				return nil
			case <-p.wake:
			}
			p.parked.Store(false)
			continue
		}
		// Measure the wait when arming, so time spent since `now` is not waited twice.
		wait := until.Sub(p.clock.Now())
		if wait <= 0 {
			continue
		}
		timer.Reset(wait)
		p.parkedUntil.Store(until.UnixNano())
		p.parked.Store(true)
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-timer.C():
		}
		p.parked.Store(false)
	}
}
