package fakeelevenlabs

import (
	"encoding/binary"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
)

// Shape of the synthetic speech.
const (
	// toneAmplitude is a peak of -3 dBFS (32767 × 10^(-3/20)): its frames are at -6 dBFS
	// RMS, as loud as a cloud TTS voice is normalised (audiotest.TTSPeakFrameDBFS), so
	// tests hear the agent at the level real calls do.
	toneAmplitude = 23197
	// wordGap is the silence after each word (shortened for very short words).
	wordGap = 60 * time.Millisecond
	// ramp fades each tone in and out so word edges do not click.
	ramp = 5 * time.Millisecond
)

// pitches are the tone frequencies (Hz) given to successive words, all well under the
// 4 kHz Nyquist limit of 8 kHz telephone audio.
var pitches = [...]float64{220, 330, 440, 294, 392, 523, 262, 349}

// tone is one word: a sine at freq over samples [start, end), silence up to the next word.
type tone struct {
	start, end int
	freq       float64
}

// speech generates the synthetic utterance for one text, sample by sample, so a long text
// streams without the whole clip ever sitting in memory.
type speech struct {
	format audio.Format
	tones  []tone
	total  int // samples
	pos    int // next sample
	cur    int // index into tones for pos
	rampN  int // samples in each fade
	pcm    []int16
}

// duration is how long the audio for text lasts at perChar per character.
func duration(text string, perChar time.Duration) time.Duration {
	return max(time.Duration(utf8.RuneCountInString(text))*perChar, MinDuration)
}

// newSpeech lays out one tone per word of text across d, each word's share of the time
// proportional to its length plus the space after it.
func newSpeech(text string, f audio.Format, d time.Duration) *speech {
	total := f.Bytes(d) / f.Encoding.BytesPerSample()
	words := strings.Fields(text)
	if len(words) == 0 {
		words = []string{text}
	}
	weight := 0
	for _, w := range words {
		weight += utf8.RuneCountInString(w) + 1
	}
	gapN := int(wordGap * time.Duration(f.Rate) / time.Second)
	tones := make([]tone, 0, len(words))
	cum := 0
	for i, w := range words {
		start := total * cum / weight
		cum += utf8.RuneCountInString(w) + 1
		end := total * cum / weight
		gap := min(gapN, (end-start)/4)
		tones = append(tones, tone{start: start, end: end - gap, freq: pitches[i%len(pitches)]})
	}
	return &speech{
		format: f,
		tones:  tones,
		total:  total,
		rampN:  max(1, int(ramp*time.Duration(f.Rate)/time.Second)),
	}
}

// remaining is the number of bytes not yet generated.
func (s *speech) remaining() int {
	return (s.total - s.pos) * s.format.Encoding.BytesPerSample()
}

// next encodes up to len(dst) bytes of the next audio into dst and returns them; it
// returns an empty slice at the end.
func (s *speech) next(dst []byte) []byte {
	bps := s.format.Encoding.BytesPerSample()
	n := min(len(dst)/bps, s.total-s.pos)
	if cap(s.pcm) < n {
		s.pcm = make([]int16, n)
	}
	pcm := s.pcm[:n]
	for i := range pcm {
		pcm[i] = s.sample(s.pos + i)
	}
	s.pos += n
	switch s.format.Encoding {
	case audio.Mulaw:
		return g711.EncodeMulaw(dst, pcm)
	case audio.Alaw:
		return g711.EncodeAlaw(dst, pcm)
	default:
		out := dst[:2*n]
		for i, v := range pcm {
			binary.LittleEndian.PutUint16(out[2*i:], uint16(v))
		}
		return out
	}
}

// sample computes sample i; calls must come in increasing order of i.
func (s *speech) sample(i int) int16 {
	for s.cur < len(s.tones)-1 && i >= s.tones[s.cur+1].start {
		s.cur++
	}
	t := s.tones[s.cur]
	if i < t.start || i >= t.end {
		return 0
	}
	gain := 1.0
	if k := i - t.start; k < s.rampN {
		gain = float64(k) / float64(s.rampN)
	}
	if k := t.end - 1 - i; k < s.rampN {
		gain = min(gain, float64(k)/float64(s.rampN))
	}
	phase := 2 * math.Pi * t.freq * float64(i-t.start) / float64(s.format.Rate)
	return int16(math.Round(toneAmplitude * gain * math.Sin(phase)))
}
