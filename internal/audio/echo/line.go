// Package echo tells the caller's voice from the agent's own voice coming back down the
// line, by what the echo on this call actually is. Handset knows every sample it sent; a
// Line places them on the inbound audio's timeline (where the carrier plays them), learns
// the echo path from how that reference correlates with what comes back (its delay and its
// echo return loss, on cheap 5 ms envelopes), and removes from each inbound frame only the
// part the learned path explains (a spectral suppressor on 40 ms windows). Where the line
// does echo, a canceller learns it to the sample and subtracts it, so the suppressor has
// only the remainder to take and a caller under the echo keeps their voice (cancel.go). A
// line with no echo therefore takes nothing away, and a caller quieter than the agent's
// voice still reaches the voice activity detector while the agent speaks.
//
// Each talkspurt (audio sent after a pause) may play tens of milliseconds earlier or later
// than the last: the carrier starts it when it arrives. For its first half second of echo
// the suppressor compares the reference within 120 ms either side of the learned delay
// (while the talkspurt's spectra, once they show where it plays, point the canceller there),
// and what that half second shows moves the delay if the talkspurt plays elsewhere.
//
// Until the path is learned (the first three quarters of a second of agent audio on a
// call) a frame counts as echo only if it is quieter than the worst echo a phone line may
// return: 6 dB below the loudest audio sent within the delay window (ITU-T G.168's minimum
// echo return loss of a hybrid).
package echo

import (
	"errors"
	"math"
	"sync"
	"time"
)

// Defaults.
const (
	// DefaultMaxDelay is the longest echo delay looked for: a 400 ms line plus the round
	// trip between Handset and the carrier and the playout lead.
	DefaultMaxDelay = 640 * time.Millisecond
	// worstLossDB is the echo return loss assumed before the path is learned.
	worstLossDB = 6.0
)

// Frame is what Process found in one inbound frame.
type Frame struct {
	// LevelDB is the inbound frame's RMS level (dBFS).
	LevelDB float64
	// EchoDB is the echo the path predicts in it (dBFS; -Inf when none can be there).
	EchoDB float64
	// ResidualDB is the level of what Process passed on (dBFS).
	ResidualDB float64
	// Suppressed: the frame carried sound (above -50 dBFS) and at least 10 dB of it was
	// taken away as echo.
	Suppressed bool
}

// Estimate is the learned echo path.
type Estimate struct {
	// Learned: enough agent audio has been heard back to estimate the path.
	Learned bool
	// Echo: what comes back follows what was sent (the envelopes correlate); when false
	// the line returns no echo Handset can detect, and DelayMS means nothing.
	Echo bool
	// DelayMS is from a sample being sent to its echo arriving.
	DelayMS float64
	// ReturnLossDB is how much quieter the echo is than what was sent (the mean over
	// bands of the learned echo return loss).
	ReturnLossDB float64
	// Correlation of the envelopes at DelayMS, 0 to 1.
	Correlation float64
	// CancelledDB is how much further down the canceller leaves the echo than the line
	// returns it (the mean over the bands it has learned; 0 until it has learned any).
	CancelledDB float64
}

// Line is one call's echo path. Played and Cleared are called by the goroutine that sends
// audio to the caller; Process and Estimate by the one goroutine that reads the caller's
// audio. Neither allocates once the Line is made.
type Line struct {
	rate, frame, block int
	blockDur           time.Duration

	mu      sync.Mutex // guards ref, refEnd and the talkspurt fields
	ref     []int16    // ring of what was sent, by inbound position; len is a power of two
	refEnd  int64      // position after the last sample placed
	spurts  int        // talkspurts placed: audio after a pause of a frame or more
	spurtAt int64      // where the latest talkspurt starts

	// Owned by the reading goroutine.
	pos        int64   // inbound samples processed
	refw       []int16 // a window of the reference copied out of the ring
	seenSpurts int     // talkspurts Process has begun
	settle     int     // frames the current talkspurt still settles under the wide span
	settleFrom int64   // where the settling talkspurt starts on the inbound timeline
	quiet      bool    // nothing was sent within the delay window at the last frame
	est        estimator
	sup        suppressor
}

// NewLine returns the echo path of a call whose inbound and outbound audio is mono PCM at
// rate Hz in 20 ms frames; maxDelay bounds the echo delay looked for (zero: the default).
func NewLine(rate int, maxDelay time.Duration) (*Line, error) {
	if rate <= 0 || rate%200 != 0 {
		return nil, errors.New("echo: the sample rate must be a positive multiple of 200 Hz")
	}
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay
	}
	frame, block := rate/50, rate/200
	maxLag := int(maxDelay / (5 * time.Millisecond))
	span := (maxLag+2)*block + 2*frame + rate/2 // reads reach this far back; half a second spare
	size := 1
	for size < span {
		size <<= 1
	}
	l := &Line{
		rate: rate, frame: frame, block: block, blockDur: 5 * time.Millisecond,
		ref:  make([]int16, size),
		refw: make([]int16, 2*frame),
	}
	l.est.init(maxLag, frame/block)
	l.sup.init(frame)
	return l, nil
}

// Rate is the sample rate the line was made for.
func (l *Line) Rate() int { return l.rate }

// Played places audio sent to the caller on the inbound timeline. at is the inbound
// position (samples received so far) when it was sent: the carrier plays what it is sent
// back to back, so audio follows the previous audio unless the carrier ran dry before it.
func (l *Line) Played(at int64, pcm []int16) {
	l.mu.Lock()
	defer l.mu.Unlock()
	mask := int64(len(l.ref) - 1)
	if l.spurts == 0 || at-l.refEnd >= int64(l.frame) { // the carrier starts it afresh
		l.spurts++
		l.spurtAt = max(at, l.refEnd)
	}
	if at > l.refEnd { // a gap: the carrier played silence meanwhile
		if at-l.refEnd > int64(len(l.ref)) {
			l.refEnd = at - int64(len(l.ref))
		}
		for p := l.refEnd; p < at; p++ {
			l.ref[p&mask] = 0
		}
		l.refEnd = at
	}
	for _, s := range pcm {
		l.ref[l.refEnd&mask] = s
		l.refEnd++
	}
}

// Cleared tells the line the carrier dropped what it had not yet played at inbound
// position at: audio placed after it never plays.
func (l *Line) Cleared(at int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at >= l.refEnd {
		return
	}
	at = max(at, l.refEnd-int64(len(l.ref)))
	mask := int64(len(l.ref) - 1)
	for p := at; p < l.refEnd; p++ {
		l.ref[p&mask] = 0
	}
	l.refEnd = at
}

// referenceLocked copies the reference for inbound positions [from, from+len(dst)) into
// dst, with l.mu held; positions never placed (or long overwritten) are silence.
func (l *Line) referenceLocked(dst []int16, from int64) {
	size := int64(len(l.ref))
	lo := max(from, 0, l.refEnd-size)         // the first position the ring holds
	hi := min(from+int64(len(dst)), l.refEnd) // after the last
	if lo >= hi {
		clear(dst)
		return
	}
	clear(dst[:lo-from])
	clear(dst[hi-from:])
	for p := lo; p < hi; { // one run, or two where the ring wraps
		i := p & (size - 1)
		n := min(hi-p, size-i)
		copy(dst[p-from:], l.ref[i:i+n])
		p += n
	}
}

// Process takes the next inbound frame and returns what of it is not echo, in out's
// storage (len(out) >= len(in)), with what it found. A frame of another length than 20 ms
// passes unchanged.
func (l *Line) Process(in, out []int16) ([]int16, Frame) {
	f := Frame{LevelDB: LevelDB(in), EchoDB: math.Inf(-1)}
	start := l.pos
	l.pos += int64(len(in))
	if len(in) != l.frame {
		f.ResidualDB = f.LevelDB
		return in, f
	}
	// The envelopes: the reference at this frame's own positions (lag 0) and the inbound.
	l.mu.Lock()
	l.referenceLocked(l.refw[:l.frame], start)
	spurts, spurtAt := l.spurts, l.spurtAt
	l.mu.Unlock()
	if spurts != l.seenSpurts {
		l.seenSpurts = spurts
		l.beginSpurt(spurtAt, spurtAt-start)
	}
	loud := l.est.louderThanEcho(f.LevelDB)
	if loud {
		l.est.doubleTalk(true) // before learning from it
	}
	l.est.addFrame(l.refw[:l.frame], in, l.block)
	if l.settle > 0 {
		if l.settle--; l.settle == 0 {
			l.est.endSpurt()
		}
	}
	if !l.est.reachable() { // nothing sent within the delay window: nothing can echo
		l.quiet = true
		l.idle(in, loud)
		f.ResidualDB = f.LevelDB
		return in, f
	}
	if l.quiet { // audio again after a silence, though none was seen to start
		l.quiet = false
		if l.settle == 0 {
			l.beginSpurt(start, 0)
		}
	}
	if !l.est.learned {
		// The worst echo a line may return, until the path is known.
		l.idle(in, loud)
		worst := l.est.loudest() - worstLossDB
		f.EchoDB = worst
		if f.LevelDB < worst {
			f.Suppressed = f.LevelDB > audibleDB
			f.ResidualDB = math.Inf(-1)
			clear(out[:len(in)])
			return out[:len(in)], f
		}
		f.ResidualDB = f.LevelDB
		return in, f
	}
	if most := l.est.mostEchoDB(); l.est.corr < echoCorrelation && most < inaudibleEchoDB {
		// A line that shows no echo, and whose learned path could not return an audible
		// one: the suppressor would take nothing, so its transforms are spared. Its band
		// gains wait meanwhile; a line that starts to echo shows it in the envelopes.
		l.sup.idle(in)
		if !loud {
			l.est.doubleTalk(f.LevelDB > audibleDB && f.LevelDB > most)
		}
		f.EchoDB, f.ResidualDB = most, f.LevelDB
		return in, f
	}
	// The reference windows at the learned delay and either side of it; the band gains are
	// learned only once the talkspurt has settled, when the delay is its own.
	settling := l.settle > 0
	lags := l.est.lags(settling)
	at := l.sup.at[:len(lags)]
	for i, lag := range lags {
		at[i] = start - int64(l.frame) - int64(lag*l.block)
	}
	l.sup.plan(at, start)
	l.mu.Lock() // once for all the windows: the sending goroutine waits on it
	for i := range lags {
		if l.sup.load[i] {
			l.referenceLocked(l.sup.refBuf(i), at[i])
		}
	}
	voters, best := 0, -1
	if settling {
		best = l.est.voted(len(lags))
	}
	// The canceller looks where the path is, or where this talkspurt's vote says it plays.
	switch {
	case best >= 0: // a caller talking over the talkspurt can sway its vote
		l.sup.can.align(int64(lags[best]*l.block), true)
	case !settling && l.est.corr >= echoCorrelation:
		l.sup.can.align(int64(l.est.delay*l.block), false)
	}
	if l.sup.can.delay >= 0 {
		l.referenceLocked(l.sup.can.ref, start-int64(l.frame)-l.sup.can.delay)
	}
	l.mu.Unlock()
	if settling && l.est.corr >= echoCorrelation {
		// Only lags whose window holds this talkspurt alone say where it plays (and only
		// on a line with echo: the vote serves the canceller).
		for voters < len(lags) && start-int64(l.frame)-int64(lags[voters]*l.block) >= l.settleFrom {
			voters++
		}
	}
	own := !settling || start-int64(l.frame)-l.sup.can.delay >= l.settleFrom
	res := l.sup.process(in, out[:len(in)], len(lags), voters, l.est.bandGain[:], &l.est, !settling, own)
	f.EchoDB, f.ResidualDB = l.sup.echoDB, LevelDB(res)
	f.Suppressed = f.LevelDB > audibleDB && f.ResidualDB < f.LevelDB-10
	// What suppression alone leaves well above the echo predicted is the caller talking
	// over it.
	if !loud {
		l.est.doubleTalk(l.sup.residualDB > audibleDB && l.sup.residualDB > f.EchoDB)
	}
	return res, f
}

// Estimate is the path as learned so far.
func (l *Line) Estimate() Estimate {
	e := Estimate{Learned: l.est.learned, Correlation: max(0, l.est.corr)}
	if !e.Learned {
		return e
	}
	e.Echo = l.est.corr >= echoCorrelation
	e.DelayMS = float64(l.est.delay) * float64(l.blockDur) / float64(time.Millisecond)
	var sum float64
	for _, g := range l.est.bandGain {
		sum += g
	}
	e.ReturnLossDB = -sum / float64(len(l.est.bandGain))
	e.CancelledDB = l.sup.can.cancelledDB(l.est.bandGain[:])
	return e
}

// idle notes a frame the suppressor did not see; only a frame louder than any echo counts
// as the caller talking over it then.
func (l *Line) idle(in []int16, loud bool) {
	l.sup.idle(in)
	if !loud {
		l.est.doubleTalk(false)
	}
}

// beginSpurt starts a talkspurt that plays ahead samples from now: it settles until
// settleFrames of its echo have come back even if it plays as late as the span the
// suppressor looks at meanwhile allows.
func (l *Line) beginSpurt(from, ahead int64) {
	l.settleFrom = from
	if l.est.learned {
		ahead += int64((l.est.delay + settleSpan*lagStep) * l.block)
	}
	l.settle = settleFrames + int(max(0, ahead)/int64(l.frame))
	l.est.beginSpurt()
	l.sup.can.beginSpurt()
}

// settleFrames (500 ms) of each talkspurt's echo are suppressed over the wide span.
const settleFrames = 25

// audibleDB is the level below which a frame says nothing either way.
const audibleDB = -50.0

// inaudibleEchoDB: an echo the path could return no louder than this (10 dB under
// audibleDB, before the suppressor's 3 dB margin) is not worth suppressing.
const inaudibleEchoDB = audibleDB - 10

// LevelDB is the RMS level of 16-bit PCM in dBFS (0 dBFS = RMS of 32768); -Inf for silence.
func LevelDB(pcm []int16) float64 {
	return 10 * math.Log10(meanSquare(pcm)/(32768*32768))
}

func meanSquare(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	// In integers: exact, so the same as summing in float64 (every partial sum is below
	// 2^53 for any frame), and without a conversion per sample.
	var sum int64
	for _, s := range pcm {
		v := int64(s)
		sum += v * v
	}
	return float64(sum) / float64(len(pcm))
}
