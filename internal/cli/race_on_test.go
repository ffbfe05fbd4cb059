//go:build race

package cli

// raceDetector: this test binary runs under the race detector (ten times slower audio math).
const raceDetector = true
