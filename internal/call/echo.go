package call

import (
	"math"
	"time"

	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/obs"
)

// echoTally sums up, for one turn, the inbound audio the echo path took away, so the
// journal can say when a caller may have been taken for echo (obs.EchoSuppressed), and
// remembers the last path journaled (obs.EchoPath).
type echoTally struct {
	turn     int
	frames   int
	loudest  float64
	checked  int // frames since the path was last looked at
	reported echo.Estimate
}

// noteEcho counts a frame the echo path processed (owner goroutine; no allocation).
func (c *Call) noteEcho(now time.Time, f echo.Frame) {
	t := &c.echoTally
	if t.turn != c.fsm.Turn {
		c.flushEchoTally(now)
		t.turn = c.fsm.Turn
	}
	if f.Suppressed {
		if t.frames == 0 || f.LevelDB > t.loudest {
			t.loudest = f.LevelDB
		}
		t.frames++
	}
	if t.checked++; t.checked < 50 { // the path is looked at once a second
		return
	}
	t.checked = 0
	e := c.echo.Estimate()
	if !e.Learned || !pathChanged(t.reported, e) {
		return
	}
	t.reported = e
	ev := obs.Event{Type: obs.EchoPath, Turn: c.fsm.Turn, Name: "none"}
	if e.Echo {
		ev.Name, ev.DelayMS, ev.ReturnLossDB = "echo", e.DelayMS, round1(e.ReturnLossDB)
		ev.CancelledDB = round1(e.CancelledDB)
	}
	c.deps.Journal.Record(now, ev)
}

// pathChanged: worth a journal line (first learned, echo found or lost, delay moved by
// more than 20 ms, the loss by more than 3 dB, or the canceller's depth by more than 6).
func pathChanged(was, now echo.Estimate) bool {
	switch {
	case !was.Learned, was.Echo != now.Echo:
		return true
	case !now.Echo:
		return false
	}
	return math.Abs(was.DelayMS-now.DelayMS) > 20 || math.Abs(was.ReturnLossDB-now.ReturnLossDB) > 3 ||
		math.Abs(was.CancelledDB-now.CancelledDB) > 6
}

// flushEchoTally journals the turn's suppressed audio, if any.
func (c *Call) flushEchoTally(now time.Time) {
	t := &c.echoTally
	if t.frames == 0 {
		return
	}
	c.deps.Journal.Record(now, obs.Event{Type: obs.EchoSuppressed, Turn: t.turn, Count: t.frames, LevelDB: round1(t.loudest)})
	t.frames, t.loudest = 0, 0
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// epochRelax lets the inbound epoch creep later by 20 µs a frame (0.1 %), so a carrier
// clock slower than ours, or a network path that got longer, is followed.
const epochRelax = 20 * time.Microsecond

// received notes n samples of caller audio arriving now (the leg's reader goroutine). The
// carrier sends at exactly its sample rate, so the frames that arrive soonest show its
// clock: the epoch is the earliest sample 0 could have been sent, and jitter or a burst of
// late frames never moves it.
func (c *Call) received(at time.Time, n int) {
	pos := c.inPos.Add(int64(n))
	now := at.UnixNano()
	epoch := now - pos*int64(time.Second)/int64(c.info.Format.Rate)
	if old := c.inEpoch.Load(); old != 0 {
		epoch = min(epoch, old+int64(epochRelax))
	}
	c.inEpoch.Store(epoch) // one writer: the reader goroutine
}

// inboundPosition is where on the inbound timeline audio sent now starts to play: the
// carrier's current position by its clock (see received).
func (c *Call) inboundPosition() int64 {
	epoch := c.inEpoch.Load()
	if epoch == 0 {
		return c.inPos.Load()
	}
	since := c.deps.Clock.Now().UnixNano() - epoch
	return max(0, since) * int64(c.info.Format.Rate) / int64(time.Second)
}
