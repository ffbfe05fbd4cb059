// Package wav owns reading and writing RIFF/WAVE files of the audio Handset handles: mono
// 16-bit PCM, G.711 mu-law and A-law, plain or wrapped in WAVE_FORMAT_EXTENSIBLE, with
// stereo PCM downmixed to mono on read. It follows the Microsoft RIFF/WAVE layout
// ("Multimedia Programming Interface and Data Specifications 1.0", 1991, and the
// WAVEFORMATEXTENSIBLE definition in mmreg.h / ksmedia.h).
package wav

import "errors"

// Errors Read returns, wrapped with the offending value where there is one; test with
// errors.Is.
var (
	ErrNotRIFF     = errors.New("wav: not a RIFF file")
	ErrNotWAVE     = errors.New("wav: RIFF file is not WAVE")
	ErrNoFormat    = errors.New("wav: no fmt chunk before the data")
	ErrNoData      = errors.New("wav: no data chunk")
	ErrBadFormat   = errors.New("wav: malformed fmt chunk")
	ErrUnsupported = errors.New("wav: unsupported format")
	// ErrTruncated means the file ended inside the data chunk. Read still returns the
	// whole samples it found along with the error, so a caller may keep them.
	ErrTruncated = errors.New("wav: data chunk truncated")
)
