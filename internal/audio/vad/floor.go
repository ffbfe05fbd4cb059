package vad

import "math"

// noiseFloor follows the quietest recent frame level (dBFS). Speech cannot pull it up
// because speech dips between syllables and words; only a level that persists without a
// dip for the whole window, which is stationary noise, raises it. Before it has seen any
// frame it is +Inf, so the first frame of a stream sets it.
type noiseFloor struct {
	slotLen int                 // samples per sub-window
	mins    [floorSlots]float64 // minimum level of each finished sub-window, +Inf if unseen
	next    int                 // index in mins the current sub-window will take
	cur     float64             // minimum of the current sub-window so far
	filled  int                 // samples in the current sub-window
	level   float64             // the floor, dBFS; +Inf before the first usable frame
	riseTau float64             // rise time constant in samples
}

func newNoiseFloor(rate int) noiseFloor {
	f := noiseFloor{
		slotLen: max(1, samples(rate, floorWindow)/floorSlots),
		riseTau: float64(samples(rate, floorRise)),
	}
	f.reset()
	return f
}

func (f *noiseFloor) reset() {
	for i := range f.mins {
		f.mins[i] = math.Inf(1)
	}
	f.next, f.filled = 0, 0
	f.cur = math.Inf(1)
	f.level = math.Inf(1)
}

// observe feeds one frame of n samples at level dBFS and updates the floor.
func (f *noiseFloor) observe(level float64, n int) {
	if n == 0 {
		return
	}
	if level < digitalSilenceDBFS {
		// Digital silence is no measure of the line's noise, but a stream that opens
		// with it is assumed quiet, so speech that follows is not taken for the floor.
		if math.IsInf(f.level, 1) {
			f.level = digitalSilenceDBFS
		}
		return
	}
	f.cur = math.Min(f.cur, level)
	f.filled += n
	if f.filled >= f.slotLen {
		f.mins[f.next] = f.cur
		f.next = (f.next + 1) % floorSlots
		f.cur, f.filled = math.Inf(1), 0
	}
	target := f.windowMin(level)
	switch {
	case target <= f.level:
		f.level = target // fall at once
	default:
		f.level += (target - f.level) * (1 - math.Exp(-float64(n)/f.riseTau))
	}
}

// windowMin is the quietest level over the window, counting the frame just seen.
func (f *noiseFloor) windowMin(level float64) float64 {
	m := math.Min(f.cur, level)
	for _, v := range f.mins {
		m = math.Min(m, v)
	}
	return m
}
