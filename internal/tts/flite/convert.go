package flite

import (
	"encoding/binary"
	"fmt"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/resample"
)

// converter turns a voice's PCM into the caller's format: resampled from the voice's
// rate when the rates differ, then encoded. One goroutine owns it; its buffers are reused,
// so convert's result is valid until the next call.
type converter struct {
	rs  *resample.Resampler // nil when the rates match
	enc audio.Encoding
	pcm []int16
	out []byte
}

// newConverter returns a converter from PCM at rate from to f, or an error naming what f
// asks for that cannot be done.
func newConverter(from int, f audio.Format) (*converter, error) {
	switch f.Encoding {
	case audio.PCM16, audio.Mulaw, audio.Alaw:
	default:
		return nil, fmt.Errorf("unsupported encoding in %s (want pcm16, mulaw or alaw)", f)
	}
	c := &converter{enc: f.Encoding}
	if from != f.Rate {
		rs, err := resample.New(from, f.Rate)
		if err != nil {
			return nil, fmt.Errorf("unsupported rate in %s (want one of %v Hz): %w", f, resample.Rates, err)
		}
		c.rs = rs
	}
	return c, nil
}

func (c *converter) convert(in []int16) []byte {
	pcm := in
	if c.rs != nil {
		c.pcm = c.rs.Process(c.pcm, in)
		pcm = c.pcm
	}
	n := len(pcm) * c.enc.BytesPerSample()
	if cap(c.out) < n {
		c.out = make([]byte, n)
	}
	out := c.out[:n]
	switch c.enc {
	case audio.PCM16:
		for i, s := range pcm {
			binary.LittleEndian.PutUint16(out[2*i:], uint16(s))
		}
	case audio.Mulaw:
		g711.EncodeMulaw(out, pcm)
	case audio.Alaw:
		g711.EncodeAlaw(out, pcm)
	}
	return out
}
