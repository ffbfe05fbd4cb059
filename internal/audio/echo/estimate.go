package echo

import "math"

// The estimator learns the echo path from 5 ms envelopes: for every candidate delay it keeps
// running sums of the reference envelope that far back against the inbound envelope, and
// the delay whose envelopes correlate best is the echo's. The echo return loss is then
// learned per frequency band by the suppressor, as the running median of how much quieter
// the inbound band is than the reference band at that delay.
const (
	// forget is the weight kept per 5 ms block: a time constant of about 4 s.
	forget = 1 - 1.0/800
	// learnBlocks of agent audio (0.75 s) before the path counts as learned.
	learnBlocks = 150
	// activeAmp is the envelope (RMS, in samples) below which reference audio is silence:
	// -60 dBFS.
	activeAmp = 32.768
	// echoCorrelation is the envelope correlation that shows an echo path.
	echoCorrelation = 0.4
	// bands of the learned return loss: 0-500, 500-1000, 1000-2000 Hz and the rest.
	bands = 4
	// medianStep is how far the learned loss moves per frame toward the running median.
	medianStep = 0.5
)

type estimator struct {
	maxLag, perFrame int
	env              []float64 // reference envelope by block, a ring over maxLag+perFrame blocks
	loudestDB        float64   // the loudest block in env (dBFS), as of the last frame
	// peak is the loudest envelope in env and peakBlock its block.
	peak         float64
	peakBlock    int64
	block        int64 // blocks seen
	lastActive   int64 // the last block with reference audio (-1: none)
	long         sums  // over the whole call, forgetting with a 4 s time constant
	activeBlocks int
	learned      bool
	delay        int     // blocks
	corr         float64 // at delay
	bandGain     [bands]float64
	lagBuf       [maxLags]int
	// frozen counts frames of double talk (the caller over the echo) for which learning
	// is paused: the caller's voice says nothing about the echo path. Learning resumes
	// after maxFrozen whatever, so a path that changed is learned again.
	frozen, hold int
	resume       int // frames still learning after maxFrozen, whatever the double talk
	// The current talkspurt's own sums, gathered while it settles (see beginSpurt).
	spurt       sums
	inSpurt     bool
	spurtActive int // blocks of reference audio in it
	// narrow: this talkspurt's echo was found at narrowAt, so the suppressor compares only
	// the reference within a few ms of it.
	narrow   bool
	narrowAt int
	// The settling talkspurt's spectral vote: for each of its lags (settleSpan either side
	// of voteDelay, the delay when it began), the summed match of that lag's reference
	// spectrum with what came back, over votes[i] frames.
	vote      [maxLags]float64
	votes     [maxLags]int
	voteDelay int
}

// sums are the running sums of the reference envelope at every lag (x) against the
// inbound envelope (y), from which the envelopes' correlation at each lag follows.
//
// The call's sums forget (forget per block), but not by shrinking every lag's sums each
// block: each block is added weight times over, and weight grows by 1/forget a block, so a
// block costs only its own additions. The sums are therefore weight times their true value
// (a talkspurt's sums never forget: their weight stays 1), and every question asked of them
// is a ratio, which the common factor leaves alone.
type sums struct {
	x, xx, xy []float64 // per lag
	y, yy, w  float64
	weight    float64 // of the last block added
}

// maxWeight is where a forgetting sum's weight is folded back into its sums (about every
// 15 minutes of blocks), long before anything could overflow.
const maxWeight = 1e100

func newSums(lags int) sums {
	return sums{x: make([]float64, lags), xx: make([]float64, lags), xy: make([]float64, lags), weight: 1}
}

func (s *sums) reset() {
	clear(s.x)
	clear(s.xx)
	clear(s.xy)
	s.y, s.yy, s.w, s.weight = 0, 0, 0, 1
}

// copyFrom makes s equal to o.
func (s *sums) copyFrom(o *sums) {
	copy(s.x, o.x)
	copy(s.xx, o.xx)
	copy(s.xy, o.xy)
	s.y, s.yy, s.w, s.weight = o.y, o.yy, o.w, o.weight
}

// forgetBlock makes the next block weigh 1/forget more than the last.
func (s *sums) forgetBlock() {
	s.weight /= forget
	if s.weight < maxWeight {
		return
	}
	k := 1 / s.weight
	for l := range s.x {
		s.x[l] *= k
		s.xx[l] *= k
		s.xy[l] *= k
	}
	s.y, s.yy, s.w, s.weight = s.y*k, s.yy*k, s.w*k, 1
}

// add adds the inbound block y, at s's weight, against the reference envelopes of lags 0,
// 1, ...: first holds the newest of them last, wrap the older ones. Lags past both are
// left as they are: silence adds nothing.
func (s *sums) add(first, wrap []float64, y float64) {
	g := s.weight
	s.w += g
	s.y += g * y
	s.yy += g * y * y
	n := len(first)
	addRun(s.x[:n], s.xx[:n], s.xy[:n], first, g, y)
	addRun(s.x[n:][:len(wrap)], s.xx[n:][:len(wrap)], s.xy[n:][:len(wrap)], wrap, g, y)
}

// addRun adds the block y at weight g against env, the reference envelopes of the lags of
// x, xx and xy in turn, newest last.
func addRun(x, xx, xy, env []float64, g, y float64) {
	xx, xy, env = xx[:len(x)], xy[:len(x)], env[:len(x)] // one bounds check, not one a lag
	for lag := range x {
		v := env[len(env)-1-lag]
		gv := g * v
		x[lag] += gv
		xx[lag] += gv * v
		xy[lag] += gv * y
	}
}

// best is the lag whose envelopes correlate best, and that correlation; ok is false when
// no lag has varied enough to tell.
//
// The inbound variance is the same at every lag, so the best lag is the one whose
// covariance over the root of its reference variance is largest; that is compared as
// cov·|cov|/vx, cross-multiplied, so no lag costs a division or a square root.
func (s *sums) best() (lag int, corr float64, ok bool) {
	if s.w == 0 {
		return 0, 0, false
	}
	inv := 1 / s.w
	my := s.y * inv
	vy := s.yy*inv - my*my
	if vy <= 0 {
		return 0, 0, false
	}
	var bestCov, bestVx float64 // the best lag's, bestVx > 0 once one is found
	for l := range s.x {
		mx := s.x[l] * inv
		vx := s.xx[l]*inv - mx*mx
		if vx <= 0 {
			continue
		}
		cov := s.xy[l]*inv - mx*my
		if bestVx == 0 || cov*math.Abs(cov)*bestVx > bestCov*math.Abs(bestCov)*vx {
			lag, bestCov, bestVx = l, cov, vx
		}
	}
	if bestVx == 0 {
		return 0, 0, false
	}
	return lag, bestCov / math.Sqrt(bestVx*vy), true
}

// Double talk pauses learning for at least holdFrames (300 ms: the caller's syllable gaps
// are not echo either), and for maxFrozen frames (2 s) at most: then it learns for
// resumeFrames (1 s) whatever, so a path that changed (a line that starts to echo looks
// like a caller talking over the agent) is learned again.
const (
	holdFrames   = 15
	maxFrozen    = 100
	resumeFrames = 50
)

// doubleTalk tells the estimator whether the frame held the caller over the echo.
func (e *estimator) doubleTalk(on bool) {
	switch {
	case e.resume > 0:
		if e.resume--; e.resume == 0 {
			e.frozen, e.hold = 0, 0
		}
	case on && e.frozen < maxFrozen:
		e.frozen++
		e.hold = holdFrames
	case on:
		e.resume, e.hold = resumeFrames, 0
	case e.hold > 0:
		e.hold--
	default:
		e.frozen = 0
	}
}

// paused: learning waits out double talk.
func (e *estimator) paused() bool { return e.hold > 0 && e.frozen < maxFrozen && e.resume == 0 }

// louderThanEcho: a frame at levelDB is more than the learned path could return of the
// loudest audio in reach, with 6 dB to spare: the caller, whatever the suppressor finds.
func (e *estimator) louderThanEcho(levelDB float64) bool {
	return e.learned && levelDB > e.mostEchoDB()+worstLossDB
}

// mostEchoDB bounds the echo the learned path could return now (dBFS): the loudest
// reference block in reach at the loudest band's gain.
func (e *estimator) mostEchoDB() float64 {
	most := -90.0
	for _, g := range e.bandGain {
		most = max(most, g)
	}
	return e.loudest() + most
}

func (e *estimator) init(maxLag, perFrame int) {
	e.maxLag, e.perFrame = maxLag, perFrame
	e.env = make([]float64, maxLag+perFrame+1)
	e.loudestDB = math.Inf(-1)
	e.long, e.spurt = newSums(maxLag+1), newSums(maxLag+1)
	e.lastActive = -1 << 40
	for i := range e.bandGain {
		e.bandGain[i] = -worstLossDB
	}
}

// addFrame adds a frame's envelopes: ref is the reference at the frame's own positions.
func (e *estimator) addFrame(ref, in []int16, block int) {
	added := false // the sums changed; without, the best lag is the same as before
	stale := false // the loudest block left the ring: look for the loudest again
	for i := 0; i+block <= len(in); i += block {
		x := math.Sqrt(meanSquare(ref[i : i+block]))
		y := math.Sqrt(meanSquare(in[i : i+block]))
		e.env[e.block%int64(len(e.env))] = x
		if x >= e.peak {
			e.peak, e.peakBlock, stale = x, e.block, false
		} else if e.block-e.peakBlock >= int64(len(e.env)) {
			stale = true // overwritten, and no block as loud came since
		}
		if x >= activeAmp {
			e.lastActive = e.block
			e.activeBlocks++
			if e.inSpurt {
				e.spurtActive++
			}
		}
		if e.reachable() && !e.paused() {
			e.addBlock(y)
			added = true
		}
		e.block++
	}
	e.findLoudest(stale)
	if !e.learned && e.activeBlocks >= learnBlocks {
		e.learned = true
		e.pickDelay()
		// Start the per-band losses from the whole-band least-squares gain at that delay,
		// so a line with no echo does not have to walk down from the worst case.
		if sxx := e.long.xx[e.delay]; sxx > 0 {
			a := e.long.xy[e.delay] / sxx
			for i := range e.bandGain {
				e.bandGain[i] = math.Max(-90, math.Min(0, 20*math.Log10(a+1e-9)))
			}
		}
		return
	}
	if e.learned && added {
		e.pickDelay()
		if e.narrow && abs(e.delay-e.narrowAt) > 1 {
			e.narrow = false // the path moved: look wide again until the next talkspurt
		}
	}
}

// reachable: some reference audio lies within the delay window, so echo may be arriving.
func (e *estimator) reachable() bool { return e.block-e.lastActive <= int64(e.maxLag+e.perFrame) }

// addBlock adds the inbound envelope y of the current block against every lag.
func (e *estimator) addBlock(y float64) {
	n := int64(len(e.env))
	// Lag by lag, the envelope ring read backwards from the current block: two plain runs
	// (down to the ring's start, then down from its end), no division per lag. Lags
	// reaching before the call's first block see silence.
	reach := int(min(int64(e.maxLag), e.block))
	at := int(e.block % n)
	first := e.env[max(0, at-reach) : at+1]         // lags 0..len-1, newest last
	wrap := e.env[len(e.env)-(reach+1-len(first)):] // the lags after them, newest last
	e.long.forgetBlock()
	e.long.add(first, wrap, y)
	if e.inSpurt {
		e.spurt.add(first, wrap, y)
	}
}

// pickDelay sets delay to the lag whose envelopes correlate best over the call.
func (e *estimator) pickDelay() {
	if lag, c, ok := e.long.best(); ok {
		e.delay, e.corr = lag, c
	}
}

// A talkspurt (audio sent after a pause) may play a few tens of milliseconds earlier or
// later than the one before: the carrier starts it when it arrives, and the network's
// delay to it varies. Each talkspurt's own evidence is therefore gathered while it
// settles under the worst-case rule; if it shows the echo clearly at another delay than
// the call's history, that evidence replaces the history.
const (
	// minSpurtBlocks of reference audio (200 ms) before a talkspurt can say where it plays.
	minSpurtBlocks = 40
	// spurtTolerance is how far (in blocks: 10 ms) a talkspurt may play from the learned
	// delay before it moves it; the suppressor's lags cover it either way.
	spurtTolerance = lagStep / 2
	// narrowCorrelation: a talkspurt whose echo correlates this well at one delay is
	// suppressed within narrowSpan of it.
	narrowCorrelation = 0.8
)

// beginSpurt starts gathering a new talkspurt's evidence.
func (e *estimator) beginSpurt() {
	e.spurt.reset()
	e.inSpurt, e.spurtActive, e.narrow = true, 0, false
	e.resetVote()
}

func (e *estimator) resetVote() {
	e.vote, e.votes = [maxLags]float64{}, [maxLags]int{}
	e.voteDelay = e.delay
}

// A settling talkspurt's spectra show where it plays long before its envelopes do: echo
// alone matches the reference spectrum at its own delay almost exactly (a cosine near 1),
// and at another only where the voice held still. Once minVotes frames have voted, the lag
// whose mean match is best, if it is clear, is where the canceller looks. (Narrowing the
// suppressor's span to the lags that match best as well was tried: a talkspurt 7-13 ms from
// a lag, between two of them, then let its echo through.)
const (
	minVotes = 4 // 80 ms
	// voteFloor: a best mean match below it shows nothing (the caller, or noise, dominates);
	// nor do lags that all match about as well (voteContrast).
	voteFloor    = 0.6
	voteContrast = 0.3
)

// addVote adds one frame's matches (one per lag of the settle span, in order, for the
// lags whose reference holds the talkspurt).
func (e *estimator) addVote(match []float64) {
	for i, m := range match {
		e.vote[i] += m
		e.votes[i]++
	}
}

// voted is the lag of the settle span's n that the vote shows the talkspurt playing at, or
// -1 while it shows none clearly.
func (e *estimator) voted(n int) int {
	top, worst, best := -1.0, math.Inf(1), -1
	for i, v := range e.vote[:n] {
		if e.votes[i] >= minVotes {
			m := v / float64(e.votes[i])
			if m > top {
				top, best = m, i
			}
			worst = min(worst, m)
		}
	}
	if top < voteFloor || top-worst < voteContrast {
		return -1
	}
	return best
}

// endSpurt ends the talkspurt's settling: where it clearly plays elsewhere, the delay moves
// there and the call's history restarts from this talkspurt.
func (e *estimator) endSpurt() {
	if !e.inSpurt {
		return
	}
	e.inSpurt = false
	if e.spurtActive < minSpurtBlocks {
		return
	}
	lag, c, ok := e.spurt.best()
	if !ok || c < echoCorrelation {
		return
	}
	if abs(lag-e.delay) > spurtTolerance {
		e.long.copyFrom(&e.spurt)
		e.delay, e.corr = lag, c
	}
	if c >= narrowCorrelation && abs(lag-e.delay) <= 1 {
		e.narrow, e.narrowAt = true, e.delay
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// loudest is the level (dBFS) of the loudest reference block in the delay window.
func (e *estimator) loudest() float64 { return e.loudestDB }

// findLoudest sets loudestDB from the envelope, once per frame (addFrame): several
// questions a frame asks need it. The peak is kept as blocks come in; only when the
// loudest block has left the ring with none as loud after it is the ring searched.
func (e *estimator) findLoudest(stale bool) {
	if stale {
		e.peak, e.peakBlock = 0, e.block-1
		n := int64(len(e.env))
		for b := max(0, e.block-n); b < e.block; b++ {
			if x := e.env[b%n]; x > e.peak {
				e.peak, e.peakBlock = x, b
			}
		}
	}
	e.loudestDB = 20 * math.Log10(e.peak/32768)
}

// The suppressor compares reference windows lagStep blocks (20 ms) apart: lagSpan steps
// either side of the learned delay, so the envelope's 5 ms steps and jitter in where the
// carrier started playing never leave echo unexplained; settleSpan steps while a talkspurt
// settles, as it may play that much earlier or later than the last; one block apart once
// the talkspurt's own echo has shown where it plays (narrow).
const (
	lagStep    = 4
	lagSpan    = 2 // ±40 ms
	narrowSpan = 3 // ±15 ms: the envelopes' 5 ms, and a talkspurt placed between them
	settleSpan = 6 // ±120 ms
	maxLags    = 2*settleSpan + 1
)

// lags are the delays (in blocks) whose reference the suppressor compares; the middle one
// is the learned delay.
func (e *estimator) lags(settling bool) []int {
	step, span, centre := lagStep, lagSpan, e.delay
	switch {
	case settling:
		span, centre = settleSpan, e.voteDelay
	case e.narrow:
		step, span = 1, narrowSpan
	}
	n := 0
	for i := -span; i <= span; i++ {
		e.lagBuf[n] = min(e.maxLag, max(0, centre+i*step))
		n++
	}
	return e.lagBuf[:n]
}

// learnBand moves band b's learned gain one step toward the running median of the
// inbound-to-reference ratio (dB) of frames where the reference band carried sound.
func (e *estimator) learnBand(b int, ratioDB float64) {
	if e.paused() {
		return
	}
	switch {
	case ratioDB > e.bandGain[b]:
		e.bandGain[b] = math.Min(0, e.bandGain[b]+medianStep)
	case ratioDB < e.bandGain[b]:
		e.bandGain[b] = math.Max(-90, e.bandGain[b]-medianStep)
	}
}
