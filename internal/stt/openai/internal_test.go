package openai

import (
	"math"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
)

func TestParseTranscription(t *testing.T) {
	cases := []struct {
		ctype, body, want string
		ok                bool
	}{
		{"application/json", `{"text":" Hello."}`, "Hello.", true},
		{"application/json; charset=utf-8", `{"text":"","usage":{"type":"duration","seconds":2}}`, "", true},
		{"application/json", `{"task":"transcribe","text":"Verbose.","segments":[]}`, "Verbose.", true},
		{"text/plain; charset=utf-8", "Plain text.\n", "Plain text.", true},
		{"text/plain", `{"text":"JSON labelled as text."}`, "JSON labelled as text.", true},
		{"", `{"text":"Unlabelled."}`, "Unlabelled.", true},
		{"application/json", `{"texts":["no"]}`, "", false},
		{"application/json", `{"text":42}`, "", false},
		{"text/html", `<html></html>`, "", false},
		{"text/plain", "\xff\xfe", "", false},
	}
	for _, c := range cases {
		got, err := parseTranscription(c.ctype, []byte(c.body))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseTranscription(%q, %q) = %q, %v", c.ctype, c.body, got, err)
		}
	}
}

func TestPrepare(t *testing.T) {
	speech := func(rate int, d time.Duration) []int16 { return audiotest.SpeechLike(rate, d, 5) }
	le := func(pcm []int16) []byte {
		b := make([]byte, 2*len(pcm))
		for i, v := range pcm {
			b[2*i], b[2*i+1] = byte(v), byte(uint16(v)>>8)
		}
		return b
	}
	cases := []struct {
		name string
		f    audio.Format
		data []byte
		skip string // "" when it is sent
		rate int
	}{
		{"empty", audio.Telephone, nil, "empty", 0},
		{"short", audio.Telephone, audiotest.Mulaw(speech(8000, 90*time.Millisecond)), "shorter than 100ms", 0},
		{"digital silence", audio.Format{Encoding: audio.PCM16, Rate: 16000}, make([]byte, 32000), "silent", 0},
		{"quiet hiss", audio.Format{Encoding: audio.PCM16, Rate: 48000}, le(audiotest.WhiteNoise(48000, time.Second, -55, 1)), "silent", 0},
		{"speech", audio.Telephone, audiotest.Mulaw(speech(8000, 100*time.Millisecond)), "", 8000},
		{"one loud frame", audio.Format{Encoding: audio.PCM16, Rate: 16000},
			le(audiotest.Concat(audiotest.Silence(16000, time.Second), audiotest.Tone(16000, 500, 20*time.Millisecond, 0.1))), "", 16000},
		{"48 kHz", audio.Format{Encoding: audio.PCM16, Rate: 48000}, le(speech(48000, 500*time.Millisecond)), "", 16000},
	}
	for _, c := range cases {
		u := prepare(c.f, c.data)
		if u.skip != c.skip {
			t.Errorf("%s: skip %q, want %q", c.name, u.skip, c.skip)
			continue
		}
		if c.skip == "" && (u.format != audio.Format{Encoding: audio.PCM16, Rate: c.rate} ||
			u.format.Duration(len(u.pcm)) != c.f.Duration(len(c.data))) {
			t.Errorf("%s: %v of %v, want %v at %d Hz", c.name, u.format.Duration(len(u.pcm)), u.format, c.f.Duration(len(c.data)), c.rate)
		}
	}
}

// TestDownsampleIsAligned checks that the delay compensation lines the output up with the
// input: a click at a known time comes out at the same time, and the end survives.
func TestDownsampleIsAligned(t *testing.T) {
	for _, from := range []int{24000, 48000} {
		in := make([]int16, from/2) // 500 ms
		click := from / 4           // at 250 ms
		for i := range 48 {
			in[click+i] = int16(8000 * math.Sin(2*math.Pi*1000*float64(i)/float64(from)))
		}
		tail := audiotest.Tone(from, 500, 10*time.Millisecond, 0.25)
		copy(in[len(in)-len(tail):], tail)
		out := downsample(in, from, 16000)
		if len(out) != 8000 {
			t.Fatalf("%d Hz: %d samples out, want 8000", from, len(out))
		}
		peak, at := 0, 0
		for i, v := range out[:6000] {
			if a := int(math.Abs(float64(v))); a > peak {
				peak, at = a, i
			}
		}
		if want := 4000 + 16; at < want-16 || at > want+16 {
			t.Errorf("%d Hz: click at output %d, want about %d", from, at, want)
		}
		if db := audiotest.RMSDBFS(out[len(out)-80:]); db < -22 {
			t.Errorf("%d Hz: the last 5 ms are at %.1f dBFS: the end was lost", from, db)
		}
	}
}
