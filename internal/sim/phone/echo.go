package phone

import (
	"math"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
)

// Acoustic echo on the caller's line: part of what plays on the caller's side comes back
// into the caller's microphone, later and quieter, mixed with whatever the caller says.
// The echo is taken from the playback model, so it is what really played: audio a clear
// dropped never echoes. It is mixed into each media frame as the writer builds it, on the
// frame's own schedule, so it needs no goroutine or timer of its own and gives the same
// stream whether the clock runs in real time or jumps.

// DefaultEchoDelay is the echo delay when EchoOptions.Delay is zero.
const DefaultEchoDelay = 120 * time.Millisecond

// EchoOptions shape the echo on the caller's line (Options.Echo).
//
// Times are stream times, as in the recording: the inbound media frame with timestamp T
// carries the caller's audio for [T, T+20 ms). A sample of Handset's audio that played at
// stream time p (see AudioPlayed events) comes back at stream time p+Delay, on the
// nearest sample, scaled by GainDB. Only what played echoes: audio dropped by a clear
// never does, and a piece cut short by a clear echoes up to the cut.
type EchoOptions struct {
	// Delay from playing to coming back. Zero or less means DefaultEchoDelay. It is at
	// least one frame (20 ms; shorter delays are raised to that): a frame leaves at its
	// timestamp, so it can only carry what has played by then.
	Delay time.Duration
	// GainDB is the echo's level relative to what played: -12 returns it 12 dB quieter,
	// 0 at the same level. The mix with the caller's own audio is clipped to 16 bits
	// before it is encoded to mu-law.
	GainDB float64
}

func (e EchoOptions) withDefaults() EchoOptions {
	switch {
	case e.Delay <= 0:
		e.Delay = DefaultEchoDelay
	case e.Delay < audio.FrameDuration:
		e.Delay = audio.FrameDuration
	}
	return e
}

// echoLine is a call's echo path. It is guarded by Call.mu.
type echoLine struct {
	delay time.Duration
	// level is the echo of each mu-law code: its decoded sample scaled by the gain, held
	// within ±2^16 so any larger value still saturates the mix.
	level [256]int32
	// heard holds the played pieces that later frames may still echo, in play order. Pieces
	// still in the playback buffer are read from there.
	heard []piece
}

func newEchoLine(o EchoOptions) *echoLine {
	o = o.withDefaults()
	e := &echoLine{delay: o.Delay}
	gain := math.Pow(10, o.GainDB/20)
	const limit = 1 << 16
	for b := range e.level {
		v := math.Round(float64(g711.DecodeMulawSample(byte(b))) * gain)
		switch {
		case math.IsNaN(v):
			v = 0
		case v > limit:
			v = limit
		case v < -limit:
			v = -limit
		}
		e.level[b] = int32(v)
	}
	return e
}

// played notes a piece of Handset's audio that played, wholly or (cut by a clear) in part.
func (e *echoLine) played(p piece) {
	if len(p.audio) > 0 {
		e.heard = append(e.heard, p)
	}
}

// mix adds to frame, the caller's audio for stream time [at, at+20 ms), the echo of what
// played over [at-delay, at-delay+20 ms). playing is the playback buffer: its pieces that
// began before the window's end have played up to it, since a frame is built no earlier
// than its timestamp and the delay is at least a frame. Frames must come in order of at.
// Samples with no echo keep the caller's byte unchanged.
func (e *echoLine) mix(frame []byte, at time.Duration, playing []piece) {
	from := at - e.delay
	to := from + audioDuration(len(frame))
	// Later windows start later, so pieces over before this one are never needed again.
	n := 0
	for n < len(e.heard) && e.heard[n].end <= from {
		n++
	}
	// Shift the rest down rather than reslice, so the array is reused frame after frame;
	// only a delay's worth of pieces is ever live, so the copy is short.
	if n > 0 {
		live := copy(e.heard, e.heard[n:])
		clear(e.heard[live:]) // let their audio go
		e.heard = e.heard[:live]
	}

	var acc [pieceBytes]int32
	window := acc[:min(len(frame), len(acc))]
	echoed := false
	for _, src := range [2][]piece{e.heard, playing} {
		for _, p := range src {
			if p.start >= to {
				break
			}
			if e.add(window, from, p) {
				echoed = true
			}
		}
	}
	if !echoed {
		return
	}
	for i, v := range window {
		if v == 0 {
			continue
		}
		s := int32(g711.DecodeMulawSample(frame[i])) + v
		frame[i] = g711.EncodeMulawSample(int16(min(max(s, math.MinInt16), math.MaxInt16)))
	}
}

// add accumulates the echo of p's samples that fall in window, which starts at stream time
// from; it reports whether any did.
func (e *echoLine) add(window []int32, from time.Duration, p piece) bool {
	off := nearestSample(p.start - from)
	lo, hi := max(0, -off), min(len(p.audio), len(window)-off)
	for i := lo; i < hi; i++ {
		window[off+i] += e.level[p.audio[i]]
	}
	return lo < hi
}

// nearestSample is d in 8 kHz samples, rounded to the nearest (halves up).
func nearestSample(d time.Duration) int {
	const sample = 125 * time.Microsecond
	d += sample / 2
	q := d / sample
	if d%sample < 0 {
		q-- // floor, not truncation, for times before the window
	}
	return int(q)
}
