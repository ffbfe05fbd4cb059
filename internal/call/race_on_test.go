//go:build race

package call

// raceDetector: the race detector allocates and empties sync.Pools at random, so counts
// of allocations mean nothing under it.
const raceDetector = true
