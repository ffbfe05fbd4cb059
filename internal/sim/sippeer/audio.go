package sippeer

import (
	"time"

	"github.com/handset-voice/handset/internal/audio"
)

// WriteToneWAV writes a d long sine at hz Hz in format f (8 kHz mu-law or A-law for sipp,
// 16-bit PCM for baresip) to path.
func WriteToneWAV(path string, f audio.Format, d time.Duration, hz float64) error { panic("not yet") }

// WriteSpeechWAV writes recorded human speech (Debian's pocketsphinx-testdata, a few
// seconds) to path in format f, resampled to f.Rate. It returns the error
// os.ErrNotExist wraps when the recordings are not installed.
func WriteSpeechWAV(path string, f audio.Format) error { panic("not yet") }

// SpeechFile is the recording WriteSpeechWAV reads.
const SpeechFile = "/usr/share/pocketsphinx/test/data/goforward.raw"
