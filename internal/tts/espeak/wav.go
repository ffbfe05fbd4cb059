package espeak

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// wavReader reads the WAV stream espeak-ng writes to its standard output. espeak-ng
// cannot seek back on a pipe, so its RIFF and data sizes are placeholders (0x7ffff000 and
// so on): header parses the chunks up to "data" and the samples then run to the end of the
// stream, whatever the sizes say.
type wavReader struct {
	r io.Reader
}

// maxFmt bounds the fmt chunk header will read; a PCM one is 16 bytes.
const maxFmt = 1 << 10

// header reads up to the start of the samples and returns their rate. It returns io.EOF
// if the stream ends before its first byte, and otherwise an error for anything but
// mono 16-bit PCM.
func (w *wavReader) header() (rate int, err error) {
	var riff [12]byte
	if n, err := io.ReadFull(w.r, riff[:]); err != nil {
		if n == 0 && err == io.EOF {
			return 0, io.EOF
		}
		return 0, fmt.Errorf("WAV header cut short after %d bytes", n)
	}
	if string(riff[0:4]) != "RIFF" || string(riff[8:12]) != "WAVE" {
		return 0, fmt.Errorf("output is not RIFF/WAVE: starts % x", riff[:])
	}
	for {
		var ch [8]byte
		if _, err := io.ReadFull(w.r, ch[:]); err != nil {
			return 0, errors.New("WAV stream ended before its data chunk")
		}
		id, size := string(ch[0:4]), binary.LittleEndian.Uint32(ch[4:8])
		switch id {
		case "fmt ":
			if size < 16 || size > maxFmt {
				return 0, fmt.Errorf("fmt chunk of %d bytes", size)
			}
			b := make([]byte, size+size&1)
			if _, err := io.ReadFull(w.r, b); err != nil {
				return 0, errors.New("WAV fmt chunk cut short")
			}
			tag := binary.LittleEndian.Uint16(b[0:2])
			channels := binary.LittleEndian.Uint16(b[2:4])
			rate = int(binary.LittleEndian.Uint32(b[4:8]))
			bits := binary.LittleEndian.Uint16(b[14:16])
			if tag != 1 || channels != 1 || bits != 16 || rate <= 0 {
				return 0, fmt.Errorf("WAV format %d, %d channels, %d bits, %d Hz (want PCM, 1, 16)", tag, channels, bits, rate)
			}
		case "data":
			if rate == 0 {
				return 0, errors.New("WAV data chunk before its fmt chunk")
			}
			return rate, nil
		default:
			if _, err := io.CopyN(io.Discard, w.r, int64(size)+int64(size&1)); err != nil {
				return 0, fmt.Errorf("WAV chunk %q cut short", id)
			}
		}
	}
}
