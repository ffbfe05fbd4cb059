package wav

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/handset-voice/handset/internal/audio"
)

// maxFmtSize bounds the fmt chunk Read will buffer; real ones are 16 to 40 bytes.
const maxFmtSize = 1 << 10

// readFmt parses a fmt chunk of size bytes (plus its pad byte) from r.
func readFmt(r io.Reader, size uint32) (*fmtInfo, error) {
	if size < 16 || size > maxFmtSize {
		return nil, fmt.Errorf("%w: fmt chunk of %d bytes", ErrBadFormat, size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("%w: fmt chunk cut short", ErrBadFormat)
	}
	if size&1 == 1 {
		_ = skip(r, 1) // pad byte; a missing one shows up as a missing data chunk
	}
	tag := binary.LittleEndian.Uint16(b[0:2])
	channels := int(binary.LittleEndian.Uint16(b[2:4]))
	rate := binary.LittleEndian.Uint32(b[4:8])
	bits := int(binary.LittleEndian.Uint16(b[14:16]))
	if tag == tagExtensible {
		var err error
		if tag, bits, err = unwrapExtensible(b, bits); err != nil {
			return nil, err
		}
	}
	info := &fmtInfo{channels: channels, rate: int(rate)}
	switch tag {
	case tagPCM:
		info.enc = audio.PCM16
	case tagMulaw:
		info.enc = audio.Mulaw
	case tagAlaw:
		info.enc = audio.Alaw
	default:
		return nil, fmt.Errorf("%w: format tag %#04x (want PCM 1, A-law 6 or mu-law 7)", ErrUnsupported, tag)
	}
	if want := 8 * info.enc.BytesPerSample(); bits != want {
		return nil, fmt.Errorf("%w: %d bits per sample for %s (want %d)", ErrUnsupported, bits, info.enc, want)
	}
	if channels != 1 && (channels != 2 || info.enc != audio.PCM16) {
		return nil, fmt.Errorf("%w: %d channels of %s (want mono, or stereo PCM)", ErrUnsupported, channels, info.enc)
	}
	if rate == 0 || rate > 1_000_000 {
		return nil, fmt.Errorf("%w: sample rate %d Hz", ErrBadFormat, rate)
	}
	return info, nil
}

// unwrapExtensible returns the format tag and container bits of a WAVEFORMATEXTENSIBLE
// chunk b: cbSize (2 bytes) at 16, wValidBitsPerSample at 18, dwChannelMask at 20 and the
// SubFormat GUID at 24.
func unwrapExtensible(b []byte, bits int) (tag uint16, containerBits int, err error) {
	if len(b) < 40 || binary.LittleEndian.Uint16(b[16:18]) < 22 {
		return 0, 0, fmt.Errorf("%w: WAVE_FORMAT_EXTENSIBLE fmt chunk of %d bytes", ErrBadFormat, len(b))
	}
	guid := b[24:40]
	if string(guid[2:]) != string(ksGUIDTail) {
		return 0, 0, fmt.Errorf("%w: extensible sub-format GUID % x", ErrUnsupported, guid)
	}
	valid := int(binary.LittleEndian.Uint16(b[18:20]))
	if valid > bits {
		return 0, 0, fmt.Errorf("%w: %d valid bits in a %d-bit container", ErrBadFormat, valid, bits)
	}
	return binary.LittleEndian.Uint16(guid[0:2]), bits, nil
}

// readData reads the data chunk of size bytes described by info.
func readData(r io.Reader, size uint32, info fmtInfo) (audio.Format, []byte, error) {
	f := audio.Format{Encoding: info.enc, Rate: info.rate}
	var src io.Reader = r
	if size != 0 && size != sizeToEnd {
		src = io.LimitReader(r, int64(size))
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return audio.Format{}, nil, fmt.Errorf("wav: read data: %w", err)
	}
	block := info.channels * info.enc.BytesPerSample()
	var truncErr error
	if size != 0 && size != sizeToEnd && uint32(len(data)) < size {
		truncErr = fmt.Errorf("%w: %d of %d bytes", ErrTruncated, len(data), size)
	}
	data = data[:len(data)/block*block]
	if info.channels == 2 {
		data = downmix(data)
	}
	return f, data, truncErr
}

// downmix turns interleaved stereo PCM16 into mono in place, averaging each pair.
func downmix(b []byte) []byte {
	n := len(b) / 4
	for i := range n {
		l := int32(int16(binary.LittleEndian.Uint16(b[4*i:])))
		r := int32(int16(binary.LittleEndian.Uint16(b[4*i+2:])))
		binary.LittleEndian.PutUint16(b[2*i:], uint16(int16((l+r)>>1)))
	}
	return b[:2*n]
}
