package audiotest

import "math"

// Real-world levels, for fakes and scenarios. A cloud TTS voice is normalised loud: its
// loudest 20 ms frames reach about -6 dBFS RMS. A phone caller's active speech level is
// about -26 dBFS, a quiet one -34, a loud one -20.
const (
	TTSPeakFrameDBFS   = -6.0
	CallerActiveDBFS   = -26.0
	QuietCallerDBFS    = -34.0
	LoudCallerDBFS     = -20.0
	activeThresholdDBs = 15.0 // frames this far below the loudest are not "active"
)

// frameLevels is the RMS level in dBFS of each whole 20 ms frame of pcm at rate Hz.
func frameLevels(pcm []int16, rate int) []float64 {
	n := max(1, rate/50)
	var out []float64
	for i := 0; i+n <= len(pcm); i += n {
		out = append(out, RMSDBFS(pcm[i:i+n]))
	}
	return out
}

// PeakFrameDBFS is the RMS level of the loudest 20 ms frame of pcm (-Inf when silent).
func PeakFrameDBFS(pcm []int16, rate int) float64 {
	peak := math.Inf(-1)
	for _, l := range frameLevels(pcm, rate) {
		peak = max(peak, l)
	}
	return peak
}

// ActiveLevelDBFS is the level of the speech in pcm: the RMS over the 20 ms frames within
// 15 dB of the loudest one, so pauses do not lower it (a simple form of the active speech
// level of ITU-T P.56). -Inf when silent.
func ActiveLevelDBFS(pcm []int16, rate int) float64 {
	levels := frameLevels(pcm, rate)
	peak := math.Inf(-1)
	for _, l := range levels {
		peak = max(peak, l)
	}
	var sum float64
	var n int
	for _, l := range levels {
		if l >= peak-activeThresholdDBs && !math.IsInf(l, -1) {
			sum += math.Pow(10, l/10)
			n++
		}
	}
	if n == 0 {
		return math.Inf(-1)
	}
	return 10 * math.Log10(sum/float64(n))
}

// Gain returns pcm scaled by db decibels, clipped to int16.
func Gain(pcm []int16, db float64) []int16 {
	g := math.Pow(10, db/20)
	out := make([]int16, len(pcm))
	for i, s := range pcm {
		out[i] = clip(float64(s) * g)
	}
	return out
}

// AtActiveLevel returns pcm scaled so its active speech level is dbfs.
func AtActiveLevel(pcm []int16, rate int, dbfs float64) []int16 {
	l := ActiveLevelDBFS(pcm, rate)
	if math.IsInf(l, -1) {
		return append([]int16(nil), pcm...)
	}
	return Gain(pcm, dbfs-l)
}

// AtPeakFrame returns pcm scaled so its loudest 20 ms frame is at dbfs RMS, the way a
// cloud TTS normalises its voice (TTSPeakFrameDBFS).
func AtPeakFrame(pcm []int16, rate int, dbfs float64) []int16 {
	l := PeakFrameDBFS(pcm, rate)
	if math.IsInf(l, -1) {
		return append([]int16(nil), pcm...)
	}
	return Gain(pcm, dbfs-l)
}
