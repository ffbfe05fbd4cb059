package phone

import (
	"encoding/binary"
	"fmt"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/resample"
)

// converter moves audio between a wire's format and the 8 kHz mu-law the core keeps. Its
// two directions have their own state and buffers: toMulaw belongs to the reader,
// fromMulaw to the writer. Neither allocates once its buffers have grown to a frame.
type converter struct {
	f                 audio.Format
	down, up          *resample.Resampler // wire rate → 8 kHz, and back; nil at 8 kHz
	inPCM, inPCM8     []int16             // the reader's buffers
	outPCM8, outPCMHi []int16             // the writer's buffers
}

// newConverter returns nil for a wire that carries 8 kHz mu-law, which needs none.
func newConverter(f audio.Format) (*converter, error) {
	if f == audio.Telephone {
		return nil, nil
	}
	switch f.Encoding {
	case audio.Mulaw, audio.Alaw, audio.PCM16:
	default:
		return nil, fmt.Errorf("audio %v: want mu-law, A-law or PCM16", f)
	}
	if f.Rate != 8000 && f.Rate != 16000 {
		return nil, fmt.Errorf("audio %v: want 8 or 16 kHz", f)
	}
	c := &converter{f: f}
	if f.Rate != 8000 {
		var err error
		if c.down, err = resample.New(f.Rate, 8000); err != nil {
			return nil, err
		}
		if c.up, err = resample.New(8000, f.Rate); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// mulawLen is the most mu-law bytes n bytes of wire audio turn into.
func (c *converter) mulawLen(n int) int {
	samples := n / c.f.Encoding.BytesPerSample()
	if c.down != nil {
		return c.down.MaxOut(samples)
	}
	return samples
}

// wireLen is the most wire bytes n mu-law bytes turn into.
func (c *converter) wireLen(n int) int {
	if c.up != nil {
		n = c.up.MaxOut(n)
	}
	return n * c.f.Encoding.BytesPerSample()
}

// toMulaw appends wire audio, converted, to dst. A trailing odd byte of PCM16 is dropped.
func (c *converter) toMulaw(dst, wire []byte) []byte {
	c.inPCM = decodeInto(c.inPCM[:0], c.f.Encoding, wire)
	pcm := c.inPCM
	if c.down != nil {
		c.inPCM8 = c.down.Process(c.inPCM8, pcm)
		pcm = c.inPCM8
	}
	for _, s := range pcm {
		dst = append(dst, g711.EncodeMulawSample(s))
	}
	return dst
}

// fromMulaw appends mu-law audio, converted to the wire's format, to dst.
func (c *converter) fromMulaw(dst, mulaw []byte) []byte {
	c.outPCM8 = decodeInto(c.outPCM8[:0], audio.Mulaw, mulaw)
	pcm := c.outPCM8
	if c.up != nil {
		c.outPCMHi = c.up.Process(c.outPCMHi, pcm)
		pcm = c.outPCMHi
	}
	for _, s := range pcm {
		switch c.f.Encoding {
		case audio.Mulaw:
			dst = append(dst, g711.EncodeMulawSample(s))
		case audio.Alaw:
			dst = append(dst, g711.EncodeAlawSample(s))
		default:
			dst = binary.LittleEndian.AppendUint16(dst, uint16(s))
		}
	}
	return dst
}

// decodeInto appends the samples of wire audio in encoding e to dst.
func decodeInto(dst []int16, e audio.Encoding, wire []byte) []int16 {
	switch e {
	case audio.Mulaw:
		for _, b := range wire {
			dst = append(dst, g711.DecodeMulawSample(b))
		}
	case audio.Alaw:
		for _, b := range wire {
			dst = append(dst, g711.DecodeAlawSample(b))
		}
	default:
		for i := 0; i+1 < len(wire); i += 2 {
			dst = append(dst, int16(binary.LittleEndian.Uint16(wire[i:])))
		}
	}
	return dst
}
