package g711

import (
	"math"
	"testing"
)

func TestMulawReferenceValues(t *testing.T) {
	cases := []struct {
		code byte
		want int16
	}{
		{0x00, -32124},
		{0x80, 32124},
		{0xff, 0},
		{0x7f, 0}, // "negative zero"
		{0x7e, -8},
		{0xfe, 8},
		{0xf0, 120}, // segment 0, top quantisation step
	}
	for _, c := range cases {
		if got := DecodeMulawSample(c.code); got != c.want {
			t.Errorf("DecodeMulawSample(%#02x) = %d, want %d", c.code, got, c.want)
		}
	}
}

func TestAlawReferenceValues(t *testing.T) {
	cases := []struct {
		code byte
		want int16
	}{
		{0xd5, 8},
		{0x55, -8},
		{0xaa, 32256},
		{0x2a, -32256},
		{0xd4, 24},
	}
	for _, c := range cases {
		if got := DecodeAlawSample(c.code); got != c.want {
			t.Errorf("DecodeAlawSample(%#02x) = %d, want %d", c.code, got, c.want)
		}
	}
}

func TestSilenceCodes(t *testing.T) {
	if got := EncodeMulawSample(0); got != MulawSilence {
		t.Errorf("EncodeMulawSample(0) = %#02x, want MulawSilence %#02x", got, MulawSilence)
	}
	if got := DecodeMulawSample(MulawSilence); got != 0 {
		t.Errorf("DecodeMulawSample(MulawSilence) = %d, want 0", got)
	}
	if got := EncodeAlawSample(0); got != AlawSilence {
		t.Errorf("EncodeAlawSample(0) = %#02x, want AlawSilence %#02x", got, AlawSilence)
	}
}

// Every code must survive decode then encode. The one exception is mu-law 0x7f, the
// "negative zero", which decodes to 0 and re-encodes as the canonical 0xff.
func TestRoundTripEveryCode(t *testing.T) {
	for i := range 256 {
		c := byte(i)
		want := c
		if c == 0x7f {
			want = 0xff
		}
		if got := EncodeMulawSample(DecodeMulawSample(c)); got != want {
			t.Errorf("mu-law %#02x -> %d -> %#02x, want %#02x", c, DecodeMulawSample(c), got, want)
		}
		if got := EncodeAlawSample(DecodeAlawSample(c)); got != c {
			t.Errorf("A-law %#02x -> %d -> %#02x", c, DecodeAlawSample(c), got)
		}
	}
}

// Companding must preserve order: a louder input never decodes quieter.
func TestMonotonic(t *testing.T) {
	codecs := []struct {
		name string
		enc  func(int16) byte
		dec  func(byte) int16
	}{
		{"mulaw", EncodeMulawSample, DecodeMulawSample},
		{"alaw", EncodeAlawSample, DecodeAlawSample},
	}
	for _, c := range codecs {
		prev := c.dec(c.enc(math.MinInt16))
		for s := math.MinInt16 + 1; s <= math.MaxInt16; s++ {
			got := c.dec(c.enc(int16(s)))
			if got < prev {
				t.Fatalf("%s: decode(encode(%d)) = %d < decode(encode(%d)) = %d", c.name, s, got, s-1, prev)
			}
			prev = got
		}
	}
}

// The quantisation error of any sample must stay within half of its segment's step
// (plus clipping at the ends of the range).
func TestQuantisationErrorBounded(t *testing.T) {
	for s := math.MinInt16; s <= math.MaxInt16; s++ {
		v := int16(s)
		if d := abs(int(DecodeMulawSample(EncodeMulawSample(v))) - s); d > muMaxErr(s) {
			t.Fatalf("mu-law: %d decodes to %d (error %d)", s, DecodeMulawSample(EncodeMulawSample(v)), d)
		}
		if d := abs(int(DecodeAlawSample(EncodeAlawSample(v))) - s); d > aMaxErr(s) {
			t.Fatalf("A-law: %d decodes to %d (error %d)", s, DecodeAlawSample(EncodeAlawSample(v)), d)
		}
	}
}

func muMaxErr(s int) int {
	a := abs(s)
	if a > 32124 {
		return a - 32124 + 1
	}
	return max(4, a/16+4) // step is 2^(seg+3) ~ a/16 at the segment top
}

func aMaxErr(s int) int {
	a := abs(s)
	if a > 32256 {
		return a - 32256 + 1
	}
	return max(16, a/16+16)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func TestSliceFunctionsMatchSampleFunctions(t *testing.T) {
	pcm := make([]int16, 512)
	for i := range pcm {
		pcm[i] = int16(i*131 - 32768)
	}
	mu := EncodeMulaw(make([]byte, len(pcm)), pcm)
	al := EncodeAlaw(make([]byte, len(pcm)+7), pcm)
	if len(mu) != len(pcm) || len(al) != len(pcm) {
		t.Fatalf("lengths %d %d, want %d", len(mu), len(al), len(pcm))
	}
	muDec := DecodeMulaw(make([]int16, len(pcm)), mu)
	alDec := DecodeAlaw(make([]int16, len(pcm)+3), al)
	for i, s := range pcm {
		if mu[i] != EncodeMulawSample(s) || al[i] != EncodeAlawSample(s) {
			t.Fatalf("sample %d: slice encode differs from sample encode", i)
		}
		if muDec[i] != DecodeMulawSample(mu[i]) || alDec[i] != DecodeAlawSample(al[i]) {
			t.Fatalf("sample %d: slice decode differs from sample decode", i)
		}
	}
}

// A 1 kHz tone at -6 dBFS must come through each codec with more than 30 dB SNR
// (G.711 gives about 38 dB on a full-scale sine).
func TestToneSNR(t *testing.T) {
	const rate, hz, n = 8000, 1000.0, 8000
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(16384 * math.Sin(2*math.Pi*hz*float64(i)/rate))
	}
	enc := make([]byte, n)
	dec := make([]int16, n)
	for _, c := range []struct {
		name string
		enc  func([]byte, []int16) []byte
		dec  func([]int16, []byte) []int16
	}{
		{"mulaw", EncodeMulaw, DecodeMulaw},
		{"alaw", EncodeAlaw, DecodeAlaw},
	} {
		out := c.dec(dec, c.enc(enc, pcm))
		var sig, noise float64
		for i := range pcm {
			s := float64(pcm[i])
			e := float64(out[i]) - s
			sig += s * s
			noise += e * e
		}
		snr := 10 * math.Log10(sig/noise)
		t.Logf("%s: SNR %.1f dB", c.name, snr)
		if snr < 30 {
			t.Errorf("%s: SNR %.1f dB, want > 30 dB", c.name, snr)
		}
	}
}

const frameSamples = 160 // 20 ms at 8 kHz

func benchPCM() []int16 {
	pcm := make([]int16, frameSamples)
	for i := range pcm {
		pcm[i] = int16(12000 * math.Sin(2*math.Pi*float64(i)/8))
	}
	return pcm
}

func BenchmarkDecodeMulawFrame(b *testing.B) {
	src := EncodeMulaw(make([]byte, frameSamples), benchPCM())
	dst := make([]int16, frameSamples)
	b.ReportAllocs()
	b.SetBytes(frameSamples)
	for b.Loop() {
		DecodeMulaw(dst, src)
	}
}

func BenchmarkEncodeMulawFrame(b *testing.B) {
	src := benchPCM()
	dst := make([]byte, frameSamples)
	b.ReportAllocs()
	b.SetBytes(frameSamples * 2)
	for b.Loop() {
		EncodeMulaw(dst, src)
	}
}

func BenchmarkDecodeAlawFrame(b *testing.B) {
	src := EncodeAlaw(make([]byte, frameSamples), benchPCM())
	dst := make([]int16, frameSamples)
	b.ReportAllocs()
	b.SetBytes(frameSamples)
	for b.Loop() {
		DecodeAlaw(dst, src)
	}
}

func BenchmarkEncodeAlawFrame(b *testing.B) {
	src := benchPCM()
	dst := make([]byte, frameSamples)
	b.ReportAllocs()
	b.SetBytes(frameSamples * 2)
	for b.Loop() {
		EncodeAlaw(dst, src)
	}
}
