package sippeer

import (
	"encoding/binary"
	"fmt"
	"os"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/resample"
	"github.com/handset-voice/handset/internal/audio/wav"
)

// SpeechFile is the recording WriteSpeechWAV reads: a man saying "go forward ten meters",
// 16 kHz 16-bit little-endian raw PCM from Debian's pocketsphinx-testdata.
const SpeechFile = "/usr/share/pocketsphinx/test/data/goforward.raw"

// speechRate is SpeechFile's sample rate.
const speechRate = 16000

// WriteToneWAV writes a d long sine at hz Hz, at half of full scale, in format f (8 kHz
// mu-law or A-law for sipp, 16-bit PCM for baresip) to path.
func WriteToneWAV(path string, f audio.Format, d time.Duration, hz float64) error {
	return writePCM(path, f, audiotest.Tone(f.Rate, hz, d, 0.5))
}

// WriteSpeechWAV writes the recorded speech in SpeechFile to path in format f, resampled
// to f.Rate. When the recording is not installed the error wraps os.ErrNotExist.
func WriteSpeechWAV(path string, f audio.Format) error {
	raw, err := os.ReadFile(SpeechFile)
	if err != nil {
		return fmt.Errorf("speech: %w", err)
	}
	pcm := make([]int16, len(raw)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	r, err := resample.New(speechRate, f.Rate)
	if err != nil {
		return fmt.Errorf("speech at %d Hz: %w", f.Rate, err)
	}
	return writePCM(path, f, r.Process(make([]int16, 0, r.MaxOut(len(pcm))), pcm))
}

// writePCM encodes pcm in f and writes it to path as a WAV file.
func writePCM(path string, f audio.Format, pcm []int16) error {
	var data []byte
	switch f.Encoding {
	case audio.Mulaw:
		data = g711.EncodeMulaw(make([]byte, len(pcm)), pcm)
	case audio.Alaw:
		data = g711.EncodeAlaw(make([]byte, len(pcm)), pcm)
	case audio.PCM16:
		data = make([]byte, 2*len(pcm))
		for i, s := range pcm {
			binary.LittleEndian.PutUint16(data[2*i:], uint16(s))
		}
	default:
		return fmt.Errorf("wav %s: unknown encoding %v", path, f.Encoding)
	}
	return wav.WriteFile(path, f, data)
}
