//go:build race

package media

// raceDetector: the race detector allocates and empties sync.Pools at random, so counts
// of allocations mean nothing under it.
const raceDetector = true
