package wav

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/handset-voice/handset/internal/audio"
)

// Format tags (mmreg.h).
const (
	tagPCM        = 0x0001
	tagAlaw       = 0x0006
	tagMulaw      = 0x0007
	tagExtensible = 0xFFFE
)

// sizeToEnd in a data chunk's size field (or a size of 0) is what streaming writers put
// when they cannot seek back: the data runs to the end of the file.
const sizeToEnd = 0xFFFFFFFF

// ksGUIDTail is bytes 2-15 of every KSDATAFORMAT_SUBTYPE GUID whose first two bytes
// are a format tag (ksmedia.h: {0000xxxx-0000-0010-8000-00AA00389B71}).
var ksGUIDTail = []byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71}

// fmtInfo is what Read needs from the fmt chunk.
type fmtInfo struct {
	enc      audio.Encoding
	channels int
	rate     int
}

// Read parses a WAVE file from r and returns its format and audio: PCM16 as little-endian
// bytes, mu-law and A-law as one byte per sample. Stereo PCM16 is downmixed to mono (the
// mean of the two channels). Chunks other than fmt and data are skipped; reading stops at
// the end of the data chunk. A data size of 0 or 0xFFFFFFFF means the data runs to the end
// of the file. If the file ends inside the data chunk, Read returns the whole samples it
// got together with an error wrapping ErrTruncated. Other failures wrap ErrNotRIFF,
// ErrNotWAVE, ErrNoFormat, ErrNoData, ErrBadFormat or ErrUnsupported, naming the value.
func Read(r io.Reader) (audio.Format, []byte, error) {
	var hdr [12]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		return audio.Format{}, nil, fmt.Errorf("%w: only %d bytes", ErrNotRIFF, n)
	}
	if string(hdr[0:4]) != "RIFF" {
		return audio.Format{}, nil, fmt.Errorf("%w: starts with %q", ErrNotRIFF, hdr[0:4])
	}
	if string(hdr[8:12]) != "WAVE" {
		return audio.Format{}, nil, fmt.Errorf("%w: form type %q", ErrNotWAVE, hdr[8:12])
	}
	var info *fmtInfo
	for {
		id, size, err := readChunkHeader(r)
		if err != nil {
			if info == nil {
				return audio.Format{}, nil, fmt.Errorf("%w (%v)", ErrNoFormat, err)
			}
			return audio.Format{}, nil, fmt.Errorf("%w (%v)", ErrNoData, err)
		}
		switch id {
		case "fmt ":
			if info, err = readFmt(r, size); err != nil {
				return audio.Format{}, nil, err
			}
		case "data":
			if info == nil {
				return audio.Format{}, nil, ErrNoFormat
			}
			return readData(r, size, *info)
		default:
			if err := skip(r, int64(size)+int64(size&1)); err != nil {
				return audio.Format{}, nil, fmt.Errorf("%w: chunk %q of %d bytes is cut short", ErrNoData, id, size)
			}
		}
	}
}

func readChunkHeader(r io.Reader) (id string, size uint32, err error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return "", 0, fmt.Errorf("end of file looking for the next chunk: %w", err)
	}
	return string(h[0:4]), binary.LittleEndian.Uint32(h[4:8]), nil
}

func skip(r io.Reader, n int64) error {
	got, err := io.CopyN(io.Discard, r, n)
	if got == n {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
