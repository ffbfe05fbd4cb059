package transcode

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g711"
)

// TestToneSurvivesEachFormat: a 1 kHz tone at 22 050 Hz comes out of every format at the
// target rate, with its length and level kept.
func TestToneSurvivesEachFormat(t *testing.T) {
	tone := audiotest.Tone(22050, 1000, time.Second, 0.5)
	for _, f := range []audio.Format{{Encoding: audio.PCM16, Rate: 16000}, {Encoding: audio.Mulaw, Rate: 8000},
		{Encoding: audio.Alaw, Rate: 8000}, {Encoding: audio.PCM16, Rate: 22050}} {
		e, err := New(22050, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		for i := 0; i < len(tone); i += 441 { // 20 ms blocks
			out = append(out, e.Encode(tone[i:min(i+441, len(tone))])...)
		}
		pcm := decode(f.Encoding, out)
		if got := float64(len(pcm)) / float64(f.Rate); math.Abs(got-1) > 0.01 {
			t.Errorf("%s: %.3f s out of 1 s", f, got)
		}
		if lvl := audiotest.ToneLevelDB(pcm[len(pcm)/4:], f.Rate, 1000); math.Abs(lvl-(-9)) > 1 {
			t.Errorf("%s: tone at %.1f dBFS, want about -9", f, lvl)
		}
	}
}

func TestEncodeLEMatchesEncode(t *testing.T) {
	pcm := audiotest.SpeechLike(16000, 200*time.Millisecond, 3)
	le := make([]byte, 2*len(pcm)+1) // and a stray odd byte
	for i, s := range pcm {
		binary.LittleEndian.PutUint16(le[2*i:], uint16(s))
	}
	a, _ := New(16000, audio.Telephone)
	b, _ := New(16000, audio.Telephone)
	if x, y := a.Encode(pcm), b.EncodeLE(le); string(x) != string(y) {
		t.Error("EncodeLE and Encode differ")
	}
}

func TestRefusesWhatItCannotDo(t *testing.T) {
	if _, err := New(16000, audio.Format{Encoding: audio.PCM16, Rate: 11025}); err == nil {
		t.Error("11025 Hz accepted")
	}
	if _, err := New(16000, audio.Format{Encoding: 99, Rate: 8000}); err == nil {
		t.Error("an unknown encoding accepted")
	}
}

func BenchmarkEncodeFrame22050ToMulaw(b *testing.B) {
	e, _ := New(22050, audio.Telephone)
	frame := audiotest.Tone(22050, 440, 20*time.Millisecond, 0.3)
	b.ReportAllocs()
	for b.Loop() {
		e.Encode(frame)
	}
}

func decode(enc audio.Encoding, b []byte) []int16 {
	switch enc {
	case audio.Mulaw:
		return g711.DecodeMulaw(make([]int16, len(b)), b)
	case audio.Alaw:
		return g711.DecodeAlaw(make([]int16, len(b)), b)
	}
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}
