package wav

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/handset-voice/handset/internal/audio"
)

// Write writes data (mono audio in format f: PCM16 as little-endian bytes, G.711 as one
// byte per sample) to w as a WAVE file: a 16-byte PCM fmt chunk for PCM16; for mu-law and
// A-law an 18-byte fmt chunk and the fact chunk the specification asks of non-PCM formats.
// An odd-length data chunk gets its pad byte. It fails for an unknown encoding, a rate that
// is not positive, PCM16 data of odd length, or data too large for RIFF's 32-bit sizes.
func Write(w io.Writer, f audio.Format, data []byte) error {
	tag, err := tagFor(f)
	if err != nil {
		return err
	}
	if f.Encoding == audio.PCM16 && len(data)%2 != 0 {
		return fmt.Errorf("wav: write: %d bytes of PCM16 is not a whole number of samples", len(data))
	}
	fmtSize, factSize := 16, 0
	if tag != tagPCM {
		fmtSize, factSize = 18, 12 // cbSize field; fact chunk header + sample count
	}
	pad := len(data) & 1
	riffSize := 4 + 8 + fmtSize + factSize + 8 + len(data) + pad
	if uint64(riffSize) > math.MaxUint32 {
		return fmt.Errorf("wav: write: %d bytes of audio is too large for a WAVE file", len(data))
	}
	bps := f.Encoding.BytesPerSample()
	h := make([]byte, 0, 12+8+fmtSize+factSize+8)
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, uint32(riffSize))
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, uint32(fmtSize))
	h = binary.LittleEndian.AppendUint16(h, tag)
	h = binary.LittleEndian.AppendUint16(h, 1) // channels
	h = binary.LittleEndian.AppendUint32(h, uint32(f.Rate))
	h = binary.LittleEndian.AppendUint32(h, uint32(f.Rate*bps)) // bytes per second
	h = binary.LittleEndian.AppendUint16(h, uint16(bps))        // block align
	h = binary.LittleEndian.AppendUint16(h, uint16(8*bps))      // bits per sample
	if tag != tagPCM {
		h = binary.LittleEndian.AppendUint16(h, 0) // cbSize
		h = append(h, "fact"...)
		h = binary.LittleEndian.AppendUint32(h, 4)
		h = binary.LittleEndian.AppendUint32(h, uint32(len(data)/bps))
	}
	h = append(h, "data"...)
	h = binary.LittleEndian.AppendUint32(h, uint32(len(data)))
	if _, err := w.Write(h); err != nil {
		return fmt.Errorf("wav: write header: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("wav: write data: %w", err)
	}
	if pad == 1 {
		if _, err := w.Write([]byte{0}); err != nil {
			return fmt.Errorf("wav: write pad: %w", err)
		}
	}
	return nil
}

func tagFor(f audio.Format) (uint16, error) {
	if f.Rate <= 0 {
		return 0, fmt.Errorf("wav: write: sample rate %d Hz", f.Rate)
	}
	switch f.Encoding {
	case audio.PCM16:
		return tagPCM, nil
	case audio.Mulaw:
		return tagMulaw, nil
	case audio.Alaw:
		return tagAlaw, nil
	}
	return 0, fmt.Errorf("wav: write: %w: encoding %s", ErrUnsupported, f.Encoding)
}

// ReadFile reads the WAVE file at path; see Read.
func ReadFile(path string) (audio.Format, []byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return audio.Format{}, nil, err
	}
	defer fh.Close()
	f, data, err := Read(fh)
	if err != nil {
		return f, data, fmt.Errorf("%s: %w", path, err)
	}
	return f, data, nil
}

// WriteFile writes data in format f to a new WAVE file at path (mode 0644, replacing any
// file there); see Write.
func WriteFile(path string, f audio.Format, data []byte) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(fh, f, data); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return fh.Close()
}
