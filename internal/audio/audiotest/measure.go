package audiotest

import "math"

// RMSDBFS is the RMS level of pcm in dBFS (0 dBFS is an RMS of 32768). An empty or
// all-zero slice returns math.Inf(-1).
func RMSDBFS(pcm []int16) float64 {
	if len(pcm) == 0 {
		return math.Inf(-1)
	}
	var sum float64
	for _, s := range pcm {
		v := float64(s)
		sum += v * v
	}
	return 10 * math.Log10(sum/float64(len(pcm))/(fullScale*fullScale))
}

// Goertzel is the mean-square power of the component of pcm at hz, in units of full scale
// squared, so a sine of peak amplitude A (in samples) gives about (A/32768)²/2 and
// 10·log10 of the result is that tone's level in dBFS. pcm is at rate Hz. A Hann window
// keeps leakage from other frequencies low (sidelobes fall below -60 dB a few bins away);
// for a clean reading pass at least 20 ms and several periods of hz.
func Goertzel(pcm []int16, rate int, hz float64) float64 {
	n := len(pcm)
	if n == 0 || rate <= 0 {
		return 0
	}
	w := 2 * math.Pi * hz / float64(rate)
	coeff := 2 * math.Cos(w)
	var s1, s2, wsum float64
	for i, x := range pcm {
		win := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n))
		wsum += win
		s0 := float64(x)*win + coeff*s1 - s2
		s2, s1 = s1, s0
	}
	re := s1 - s2*math.Cos(w)
	im := s2 * math.Sin(w)
	amp := 2 * math.Sqrt(re*re+im*im) / wsum // peak amplitude in samples
	a := amp / fullScale
	return a * a / 2
}

// ToneLevelDB is the level in dBFS of the tone at hz in pcm (at rate Hz), measured with
// Goertzel; math.Inf(-1) when there is none at all.
func ToneLevelDB(pcm []int16, rate int, hz float64) float64 {
	return 10 * math.Log10(Goertzel(pcm, rate, hz))
}
