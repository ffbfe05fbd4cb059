package openai

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/resample"
	"github.com/handset-voice/handset/internal/audio/vad"
)

// Upload shaping.
const (
	// maxUploadRate is the highest rate uploaded; faster audio is resampled down to it.
	// Whisper works at 16 kHz, so more only makes the upload bigger.
	maxUploadRate = 16000
	// minUtterance is the shortest utterance sent; OpenAI refuses audio under 0.1 s.
	minUtterance = 100 * time.Millisecond
	// silenceDBFS is the level a 20 ms frame must reach for the utterance to be sent: the
	// energy VAD's absolute floor for speech.
	silenceDBFS = vad.DefaultMinLevelDBFS
)

// upload is one utterance ready to send: 16-bit PCM bytes in format, or the reason it is
// not sent.
type upload struct {
	format audio.Format
	pcm    []byte
	skip   string
}

// prepare decodes an utterance in format f, resamples it to at most maxUploadRate and
// decides whether it is worth sending.
func prepare(f audio.Format, data []byte) upload {
	if len(data) == 0 {
		return upload{skip: "empty"}
	}
	if f.Duration(len(data)) < minUtterance {
		return upload{skip: "shorter than " + minUtterance.String()}
	}
	pcm := decode(f.Encoding, data)
	rate := f.Rate
	if rate > maxUploadRate {
		pcm, rate = downsample(pcm, rate, maxUploadRate), maxUploadRate
	}
	if silent(pcm, rate) {
		return upload{skip: "silent"}
	}
	b := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return upload{format: audio.Format{Encoding: audio.PCM16, Rate: rate}, pcm: b}
}

// decode turns audio bytes of encoding enc into samples (an odd trailing byte of PCM16 is
// dropped).
func decode(enc audio.Encoding, data []byte) []int16 {
	switch enc {
	case audio.Mulaw:
		return g711.DecodeMulaw(make([]int16, len(data)), data)
	case audio.Alaw:
		return g711.DecodeAlaw(make([]int16, len(data)), data)
	}
	pcm := make([]int16, len(data)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
	}
	return pcm
}

// downsample converts a whole utterance from rate from to rate to, compensating the
// filter's delay so the output lines up with the input and keeps its last moments.
func downsample(pcm []int16, from, to int) []int16 {
	rs, err := resample.New(from, to)
	if err != nil {
		return pcm // unreachable: checkFormat admits only resample.Rates
	}
	lead := int(math.Round(rs.Delay().Seconds() * float64(to)))
	pad := int(math.Ceil(rs.Delay().Seconds()*float64(from))) + from/to
	in := append(pcm[:len(pcm):len(pcm)], make([]int16, pad)...)
	out := rs.Process(nil, in)
	want := len(pcm) * to / from
	return out[min(lead, len(out)):min(lead+want, len(out))]
}

// silent reports whether no 20 ms frame of pcm reaches silenceDBFS.
func silent(pcm []int16, rate int) bool {
	frame := max(1, rate/50)
	thr := 32768 * math.Pow(10, silenceDBFS/20)
	for start := 0; start < len(pcm); start += frame {
		end := min(start+frame, len(pcm))
		var sum float64
		for _, v := range pcm[start:end] {
			sum += float64(v) * float64(v)
		}
		if sum >= thr*thr*float64(end-start) {
			return false
		}
	}
	return true
}
