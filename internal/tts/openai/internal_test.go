package openai

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/resample"
)

func TestCheckContentType(t *testing.T) {
	for ct, ok := range map[string]bool{
		"": true, "audio/pcm": true, "audio/L16; rate=24000; channels=1": true, "application/octet-stream": true,
		"audio/mpeg": false, "audio/wav": false, "audio/x-wav": false, "audio/flac": false, "audio/opus": false,
		"application/json": false, "application/json; charset=utf-8": false, "text/html; charset=utf-8": false,
	} {
		if err := checkContentType(ct); (err == nil) != ok {
			t.Errorf("checkContentType(%q) = %v, want ok %v", ct, err, ok)
		}
	}
}

func newConv(t *testing.T, f audio.Format) *converter {
	t.Helper()
	c, err := newConverter(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConverterChunking checks that the output does not depend on how the input bytes are
// cut, including cuts inside a sample, and that n samples give ceil(n·to/from).
func TestConverterChunking(t *testing.T) {
	pcm := audiotest.SpeechLike(24000, 777*time.Millisecond, 9)
	src := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(v))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	formats := []audio.Format{
		audio.Telephone,
		{Encoding: audio.Alaw, Rate: 8000},
		{Encoding: audio.PCM16, Rate: 16000},
		{Encoding: audio.PCM16, Rate: 24000},
		{Encoding: audio.PCM16, Rate: 48000},
	}
	for _, f := range formats {
		c := newConv(t, f)
		whole := c.flush(c.convert(nil, src))
		wantSamples := (len(pcm)*f.Rate + 23999) / 24000
		if len(whole) != wantSamples*f.Encoding.BytesPerSample() {
			t.Errorf("%v: %d bytes, want %d samples", f, len(whole), wantSamples)
		}
		for trial := range 20 {
			c := newConv(t, f)
			var got []byte
			for rest := src; len(rest) > 0; {
				n := min(len(rest), rng.IntN(999))
				if trial == 0 {
					n = 1 // a byte at a time
				}
				got = c.convert(got, rest[:n])
				rest = rest[n:]
			}
			got = c.flush(got)
			if !bytes.Equal(got, whole) {
				t.Fatalf("%v trial %d: output depends on the chunking", f, trial)
			}
		}
	}
}

func TestConverterDropsADanglingHalfSample(t *testing.T) {
	c := newConv(t, audio.Format{Encoding: audio.PCM16, Rate: 24000})
	out := c.convert(nil, []byte{1, 0, 2})
	out = c.flush(out)
	if !bytes.Equal(out, []byte{1, 0}) {
		t.Errorf("got % x, want 01 00", out)
	}
}

func TestNewConverterRefuses(t *testing.T) {
	for _, f := range []audio.Format{{Encoding: audio.PCM16, Rate: 44100}, {Encoding: 7, Rate: 8000}} {
		if _, err := newConverter(f); err == nil || !strings.Contains(err.Error(), f.String()) {
			t.Errorf("%v: %v", f, err)
		}
	}
	if _, err := resample.New(PCMRate, 8000); err != nil {
		t.Fatal(err)
	}
}
