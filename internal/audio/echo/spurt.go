package echo

// A talkspurt is audio the carrier plays back to back. Each one is placed on the inbound
// timeline where Handset reckons the carrier will start playing it, but the carrier starts
// it at its own next frame, after its own jitter buffer: a few milliseconds either way, and
// differently for every talkspurt. The learned delay is the average over talkspurts, so the
// suppressor has to look 40 ms either side of it to explain all the echo, and at a caller
// far below the echo that width buries the caller's first syllable. So the echo of each
// talkspurt is aligned on its own: once enough of it has come back, the delay that explains
// it best within spurtSpan of the learned one is this talkspurt's, and the suppressor looks
// only spurtNarrow blocks either side of it.
const (
	spurtSpan     = 8   // blocks (40 ms) either side of the learned delay searched
	spurtMinBlock = 40  // blocks (200 ms) of the talkspurt's echo before it counts
	spurtCorr     = 0.7 // the envelope correlation at which a talkspurt counts as aligned
	spurtNarrow   = 1   // blocks either side of the talkspurt's delay the suppressor compares
)

// spurt aligns the echo of the current talkspurt.
type spurt struct {
	seq          int   // the talkspurt's number, from Line.Played
	at           int64 // where it starts, in blocks on the inbound timeline
	pending      bool  // its echo has not started arriving
	active       bool  // its sums are being kept
	center       int   // the learned delay when its echo started (blocks)
	blocks       int
	sx, sxx, sxy [2*spurtSpan + 1]float64
	sy, syy      float64
	delay        int     // its best delay (blocks), valid when aligned
	corr         float64 // the correlation there
}

// started notes talkspurt seq starting at block at. The previous talkspurt's alignment
// holds until the new one's echo starts to arrive.
func (s *spurt) started(seq int, at int64) {
	if seq == s.seq {
		return
	}
	s.seq, s.at, s.pending = seq, at, true
}

// tick moves on to the new talkspurt once its echo can be arriving at block b.
func (s *spurt) tick(e *estimator, b int64) {
	if s.pending && b >= s.at+int64(e.delay-spurtSpan) {
		*s = spurt{seq: s.seq, at: s.at, active: true, center: e.delay}
	}
}

// add adds one inbound block's envelope y (block b) against the reference envelopes around
// the learned delay.
func (s *spurt) add(e *estimator, b int64, y float64) {
	if !s.active {
		return
	}
	n := int64(len(e.env))
	for j := range s.sx {
		lag := s.center + j - spurtSpan
		x := 0.0
		if lag >= 0 && lag <= e.maxLag && b-int64(lag) >= 0 {
			x = e.env[(b-int64(lag))%n]
		}
		s.sx[j] += x
		s.sxx[j] += x * x
		s.sxy[j] += x * y
	}
	s.sy += y
	s.syy += y * y
	s.blocks++
	if s.blocks >= spurtMinBlock && s.blocks%4 == 0 { // once a frame
		s.pick()
	}
}

// pick sets delay to the lag whose envelopes correlate best over the talkspurt so far.
func (s *spurt) pick() {
	w := float64(s.blocks)
	my := s.sy / w
	vy := s.syy/w - my*my
	s.corr = -2
	for j := range s.sx {
		mx := s.sx[j] / w
		vx := s.sxx[j]/w - mx*mx
		if vx <= 0 || vy <= 0 {
			continue
		}
		if c := (s.sxy[j]/w - mx*my) / sqrt(vx*vy); c > s.corr {
			s.corr, s.delay = c, s.center+j-spurtSpan
		}
	}
}

// aligned: the talkspurt's own delay is known.
func (s *spurt) aligned() bool { return s.active && s.blocks >= spurtMinBlock && s.corr >= spurtCorr }
