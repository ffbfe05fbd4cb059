package media

import (
	"runtime/debug"
	"testing"
)

// poolAllocs is testing.AllocsPerRun for code that takes buffers from sync.Pools (the
// jitter buffer's frames): no collection empties the pools while it counts. ok is false
// under the race detector, which drops pooled buffers at random: the count means nothing
// then, though f still ran.
func poolAllocs(runs int, f func()) (allocs float64, ok bool) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	return testing.AllocsPerRun(runs, f), !raceDetector
}
