package audiotest

import (
	"encoding/binary"
	"math"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
)

// MixAtSNR adds noise to signal scaled so that the ratio of the signal's RMS to the scaled
// noise's RMS, both measured over len(signal) samples, is snrDB. The result has the length
// of signal; noise is repeated when it is shorter. The sum is clipped to int16. A silent
// signal or noise returns a copy of signal.
func MixAtSNR(signal, noise []int16, snrDB float64) []int16 {
	out := make([]int16, len(signal))
	copy(out, signal)
	if len(noise) == 0 {
		return out
	}
	var ps, pn float64
	for i, s := range signal {
		n := float64(noise[i%len(noise)])
		ps += float64(s) * float64(s)
		pn += n * n
	}
	if ps == 0 || pn == 0 {
		return out
	}
	g := math.Sqrt(ps / pn / math.Pow(10, snrDB/10))
	for i, s := range signal {
		out[i] = clip(float64(s) + g*float64(noise[i%len(noise)]))
	}
	return out
}

// Mix is the sample-wise sum of a and b, clipped to int16, as long as the longer of them.
func Mix(a, b []int16) []int16 {
	if len(a) < len(b) {
		a, b = b, a
	}
	out := make([]int16, len(a))
	for i, s := range a {
		v := int32(s)
		if i < len(b) {
			v += int32(b[i])
		}
		out[i] = int16(max(math.MinInt16, min(math.MaxInt16, v)))
	}
	return out
}

// Concat joins clips end to end into a new slice.
func Concat(clips ...[]int16) []int16 {
	n := 0
	for _, c := range clips {
		n += len(c)
	}
	out := make([]int16, 0, n)
	for _, c := range clips {
		out = append(out, c...)
	}
	return out
}

// Mulaw encodes pcm as G.711 mu-law, one byte per sample.
func Mulaw(pcm []int16) []byte {
	return g711.EncodeMulaw(make([]byte, len(pcm)), pcm)
}

// Decode turns audio in f (PCM16 little-endian, mu-law or A-law) back into samples.
func Decode(f audio.Format, b []byte) []int16 {
	switch f.Encoding {
	case audio.Mulaw:
		return g711.DecodeMulaw(make([]int16, len(b)), b)
	case audio.Alaw:
		return g711.DecodeAlaw(make([]int16, len(b)), b)
	}
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return pcm
}
