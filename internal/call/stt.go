package call

import (
	"errors"
	"time"

	"github.com/handset-voice/handset/internal/audio/ring"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/voice"
)

// How a call keeps a recognizer hearing its caller (docs/turn-taking.md, "When a speech
// provider fails"). A provider may repair a dropped socket itself (Deepgram reopens it
// within a second); once its stream has ended, or could not be opened, the call takes over:
// the fallback recognizer at once, if there is one, otherwise the primary again after a
// wait that doubles up to Config.STTRetryMax, for as long as the call lasts. Whichever
// opens is given the caller's audio since the last final transcript, so an utterance a
// failure cut off is heard whole. A call that has switched to the fallback stays on it
// while it works: a switch mid-call risks words at the seam, and the next call starts on
// the primary again.
const (
	// heldAudio is how much caller audio since the last final transcript is kept for the
	// next recognizer: the longest utterance a failure can cut off and still be heard.
	heldAudio = 8 * time.Second
	// sttStable is how long a stream must have lived (or a transcript it must have given)
	// for its end to count as a new failure rather than the same outage: the wait before
	// the next open then starts again from Config.STTRetryMin.
	sttStable = 10 * time.Second
)

// sttState is the call's hold on speech recognition. Owned by the Run goroutine.
type sttState struct {
	recs    []voice.Recognizer // the primary, then the fallback if configured
	cur     int                // recs index of the open stream
	opening []bool             // an open of recs[i] is in flight
	tried   []bool             // recs[i] failed in the current round of attempts
	// down is when the caller was last heard by a working stream: the call's start, or
	// the failure that began this outage. Zero while a stream is open.
	down     time.Time
	lost     bool  // the turn machine was told nothing hears the caller
	lastErr  error // the latest failure of this outage
	attempts int   // opens since the outage began
	backoff  time.Duration
	gen      uint32      // arming of retry and grace; a timer of an older one is stale
	retry    clock.Timer // the next round of opens
	grace    clock.Timer // when the turn machine is told
	openedAt time.Time   // when the open stream opened
	heard    bool        // the open stream gave a transcript
	held     *ring.Frames
	pending  bool   // held audio not yet given to the open stream
	buf      []byte // one held frame, while it is replayed
}

// Events of the recognizer's supervision.
type (
	sttOpened struct {
		idx int
		s   voice.RecognizerStream
		err error
	}
	sttTimer struct {
		grace bool // the grace ran out (otherwise: the wait before the next round did)
		gen   uint32
	}
)

func (c *Call) initSTT(frameBytes int) {
	st := &c.sttSt
	st.recs = []voice.Recognizer{c.deps.STT}
	if c.deps.STTFallback != nil {
		st.recs = append(st.recs, c.deps.STTFallback)
	}
	st.opening = make([]bool, len(st.recs))
	st.tried = make([]bool, len(st.recs))
	st.held = ring.NewFrames(int(heldAudio/(20*time.Millisecond)), frameBytes)
	st.buf = make([]byte, 0, frameBytes)
}

// startSTT opens the primary. Until it is open, the caller's audio is held for it; if it
// takes longer than the grace, the turn machine hears of it and the fallback is tried.
func (c *Call) startSTT(now time.Time) {
	c.sttSt.down = now
	c.armSTTTimer(true, c.cfg.STTGrace)
	c.openSTT(0)
}

// openSTT opens recs[i] on a goroutine of its own: a handshake may take seconds, and the
// call goes on meanwhile.
func (c *Call) openSTT(i int) {
	st := &c.sttSt
	st.opening[i] = true
	st.attempts++
	rec := st.recs[i]
	c.goSafe("stt open", func() {
		s, err := rec.Stream(c.ctx, c.info.Format, voice.StreamOptions{CallID: c.info.CallID})
		if !c.deliver(sttOpened{idx: i, s: s, err: err}) && s != nil {
			_ = s.Close() // the call is over
		}
	})
}

func (c *Call) onSTTOpened(e sttOpened) {
	st := &c.sttSt
	st.opening[e.idx] = false
	if e.err != nil {
		c.sttFailed(e.idx, e.err)
		return
	}
	if c.stt != nil { // the other recognizer got there first: it stays
		c.goSafe("stt close", func() { _ = e.s.Close() })
		return
	}
	now := c.deps.Clock.Now()
	c.stt, st.cur, st.openedAt, st.heard = e.s, e.idx, now, false
	if st.lastErr != nil || st.lost {
		name := st.recs[e.idx].Name()
		c.deps.Journal.Record(now, obs.Event{Type: obs.STTRecovered, Name: name, Count: st.attempts,
			AudioMS: c.info.Format.Duration(st.held.Len() * c.info.Format.FrameBytes()).Milliseconds()})
		c.log.Info("speech recognition is back", "stt", name, "opens", st.attempts, "down_for", now.Sub(st.down))
		c.step(turn.Input{Kind: turn.STTRestored})
	}
	st.down, st.lost, st.lastErr, st.attempts = time.Time{}, false, nil, 0
	clear(st.tried)
	c.stopSTTTimers()
	st.pending = true
	c.flushHeld()
}

// sttEnded: the open stream's results closed without our asking.
func (c *Call) sttEnded() {
	st := &c.sttSt
	err := c.stt.Close()
	c.stt = nil
	if err == nil {
		err = errors.New("stream ended")
	}
	if st.heard || c.deps.Clock.Now().Sub(st.openedAt) >= sttStable {
		st.backoff = 0 // it worked for a while: this is a new failure, not the same outage
	}
	c.sttFailed(st.cur, err)
}

// sttFailed records a failure of recs[i] and starts, or carries on, the outage.
func (c *Call) sttFailed(i int, err error) {
	st := &c.sttSt
	now := c.deps.Clock.Now()
	name := st.recs[i].Name()
	c.journalNamed(obs.STTError, 0, name, err)
	if c.stt != nil { // an open that lost the race: the other recognizer hears the caller
		c.log.Debug("speech recognition failed to open; the other recognizer hears the caller", "stt", name, "err", err)
		return
	}
	if st.lastErr == nil {
		c.log.Warn("speech recognition failed; reopening", "stt", name, "err", err)
	} else {
		c.log.Debug("speech recognition still failing", "stt", name, "err", err)
	}
	st.lastErr = err
	st.tried[i] = true
	if st.down.IsZero() {
		st.down, st.attempts = now, 0
		c.armSTTTimer(true, c.cfg.STTGrace)
	}
	c.nextSTT()
}

// nextSTT opens the next recognizer not yet tried in this round; when every one has
// failed it waits, longer each round up to STTRetryMax, and starts again from the primary.
func (c *Call) nextSTT() {
	st := &c.sttSt
	if c.stt != nil {
		return
	}
	busy := false
	for i := range st.recs {
		if !st.tried[i] && !st.opening[i] {
			c.openSTT(i)
			return
		}
		busy = busy || st.opening[i]
	}
	if busy {
		return // an open in flight decides what comes next
	}
	switch {
	case permanent(st.lastErr):
		st.backoff = c.cfg.STTRetryMax // a refused key or format will not mend in a second
	case st.backoff == 0:
		st.backoff = c.cfg.STTRetryMin
	default:
		st.backoff = min(2*st.backoff, c.cfg.STTRetryMax)
	}
	c.armSTTTimer(false, st.backoff)
}

// permanent: a failure no quick retry will mend.
func permanent(err error) bool {
	switch voice.KindOf(err) {
	case voice.KindAuth, voice.KindBadInput, voice.KindQuota:
		return true
	}
	return false
}

func (c *Call) onSTTTimer(e sttTimer) {
	st := &c.sttSt
	if e.gen != st.gen || c.stt != nil {
		return // stale: a recognizer opened since
	}
	if !e.grace {
		clear(st.tried)
		c.nextSTT()
		return
	}
	if st.lost {
		return
	}
	st.lost = true
	ev := obs.Event{Type: obs.STTLost}
	if st.lastErr != nil {
		ev.Kind, ev.Message = voice.KindOf(st.lastErr).String(), voice.Clip(st.lastErr.Error(), voice.EchoLimit)
	}
	c.deps.Journal.Record(c.deps.Clock.Now(), ev)
	c.log.Warn("nothing hears the caller; still trying", "for", c.cfg.STTGrace)
	c.step(turn.Input{Kind: turn.STTLost})
	// A primary whose handshake hangs is not waited for: the fallback is tried alongside.
	if len(st.recs) > 1 && !st.tried[1] && !st.opening[1] && c.stt == nil {
		c.openSTT(1)
	}
}

func (c *Call) armSTTTimer(grace bool, d time.Duration) {
	st := &c.sttSt
	ev := sttTimer{grace: grace, gen: st.gen}
	t := c.deps.Clock.AfterFunc(d, func() { c.post(ev) })
	if grace {
		if st.grace != nil {
			st.grace.Stop()
		}
		st.grace = t
	} else {
		if st.retry != nil {
			st.retry.Stop()
		}
		st.retry = t
	}
}

func (c *Call) stopSTTTimers() {
	st := &c.sttSt
	st.gen++
	for _, t := range []clock.Timer{st.retry, st.grace} {
		if t != nil {
			t.Stop()
		}
	}
	st.retry, st.grace = nil, nil
}

// hearFrame gives a caller frame to the recognizer, and keeps it for the next one should
// this one fail before a final transcript covers it.
func (c *Call) hearFrame(frame []byte) {
	if c.stt != nil {
		c.flushHeld()
		_ = c.stt.Write(frame) // a full STT queue drops its oldest audio and counts it
	}
	c.sttSt.held.Push(frame)
}

// flushHeld replays the held audio into a newly opened stream, ahead of any live audio,
// once its transcript would count: while the machine listens, or in the tail grace (where a
// final starts the caller's next turn), never while the agent speaks (the notice, say),
// when a final inside the barge-in gate would be dropped. A caller who has stopped speaking
// gets a Finalize after it, so a recognizer that transcribes only on Finalize hears the
// held utterance now.
func (c *Call) flushHeld() {
	st := &c.sttSt
	if !st.pending || c.stt == nil || !c.fsm.ListeningToSTT() && c.fsm.Phase != turn.TailGrace {
		return
	}
	st.pending = false
	n := st.held.Len()
	if n == 0 {
		return
	}
	for range n { // each frame goes back in at the tail: the ring is left as it was
		f, _ := st.held.Pop(st.buf)
		_ = c.stt.Write(f)
		st.held.Push(f)
	}
	if !c.fsm.CallerSpeaking {
		_ = c.stt.Finalize()
	}
}

// heardFinal: a final transcript covers the caller's audio so far.
func (c *Call) heardFinal() { c.sttSt.held.Reset() }

// closeOpened closes streams whose open was reported after the loop ended.
func (c *Call) closeOpened() {
	for {
		select {
		case ev := <-c.events:
			if o, ok := ev.(sttOpened); ok && o.s != nil {
				_ = o.s.Close()
			}
		default:
			return
		}
	}
}
