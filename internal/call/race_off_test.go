//go:build !race

package call

const raceDetector = false
