package vadtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/wav"
)

// SpeechRate is the sample rate of the recordings, in Hz.
const SpeechRate = 16000

// DefaultSpeechDir is where Debian's pocketsphinx-testdata installs its recordings.
const DefaultSpeechDir = "/usr/share/pocketsphinx/test/data"

// speechFiles are the recordings the track is built from, relative to the speech
// directory: five LibriVox sentences read by one woman, five card names ("four queen of
// clubs") and three short commands from other speakers, all 16 kHz 16-bit mono. The .raw
// files are headerless little-endian PCM.
var speechFiles = []string{
	"librivox/sense_and_sensibility_01_austen_64kb-0870.wav",
	"cards/001.wav",
	"librivox/sense_and_sensibility_01_austen_64kb-0880.wav",
	"goforward.raw",
	"cards/002.wav",
	"librivox/sense_and_sensibility_01_austen_64kb-0890.wav",
	"numbers.raw",
	"cards/003.wav",
	"librivox/sense_and_sensibility_01_austen_64kb-0920.wav",
	"something.raw",
	"cards/004.wav",
	"librivox/sense_and_sensibility_01_austen_64kb-0930.wav",
	"cards/005.wav",
}

// Recording is one utterance as recorded: its file name and 16 kHz samples.
type Recording struct {
	Name string
	PCM  []int16
}

// SpeechDir is the directory holding the recordings: $HANDSET_SPEECH_DIR when set,
// otherwise DefaultSpeechDir.
func SpeechDir() string {
	if d := os.Getenv("HANDSET_SPEECH_DIR"); d != "" {
		return d
	}
	return DefaultSpeechDir
}

// LoadRecordings reads every recording the track uses from dir. A missing file is an
// error that says how to install the recordings.
func LoadRecordings(dir string) ([]Recording, error) {
	var recs []Recording
	for _, name := range speechFiles {
		path := filepath.Join(dir, name)
		pcm, err := readSpeech(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("vadtest: %w: install the Debian package pocketsphinx-testdata "+
				"(./scripts/test-deps.sh does) or point HANDSET_SPEECH_DIR at a copy of its test/data", err)
		}
		if err != nil {
			return nil, fmt.Errorf("vadtest: %w", err)
		}
		recs = append(recs, Recording{Name: name, PCM: pcm})
	}
	return recs, nil
}

func readSpeech(path string) ([]int16, error) {
	if filepath.Ext(path) == ".raw" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return pcm16(b), nil
	}
	f, b, err := wav.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if f != (audio.Format{Encoding: audio.PCM16, Rate: SpeechRate}) {
		return nil, fmt.Errorf("%s: format %v, want pcm16/%d", path, f, SpeechRate)
	}
	return pcm16(b), nil
}

func pcm16(b []byte) []int16 {
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}

// gaps are the silences between recordings in the track, cycled: 1 to 2 s, so that a
// detector with a 500 ms hangover must end each utterance before the next starts.
var gaps = []time.Duration{
	1500 * time.Millisecond, 1000 * time.Millisecond, 2000 * time.Millisecond,
	1200 * time.Millisecond, 1800 * time.Millisecond, 1400 * time.Millisecond,
}
