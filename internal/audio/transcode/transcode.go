// Package transcode turns 16-bit PCM from an engine (a local TTS voice at its own rate)
// into any of Handset's wire formats: resampled when the rates differ, then encoded.
package transcode

import (
	"encoding/binary"
	"fmt"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/resample"
)

// Encoder converts one stream. One goroutine owns it; its buffers are reused, so a result
// is valid until the next call.
type Encoder struct {
	rs  *resample.Resampler // nil when the rates match
	enc audio.Encoding
	in  []int16
	pcm []int16
	out []byte
}

// New returns an Encoder from PCM at rate from to f, or an error naming what f asks for
// that cannot be done.
func New(from int, f audio.Format) (*Encoder, error) {
	switch f.Encoding {
	case audio.PCM16, audio.Mulaw, audio.Alaw:
	default:
		return nil, fmt.Errorf("unsupported encoding in %s (want pcm16, mulaw or alaw)", f)
	}
	e := &Encoder{enc: f.Encoding}
	if from != f.Rate {
		rs, err := resample.New(from, f.Rate)
		if err != nil {
			return nil, fmt.Errorf("unsupported rate in %s (want one of %v Hz): %w", f, resample.Rates, err)
		}
		e.rs = rs
	}
	return e, nil
}

// Encode converts samples.
func (e *Encoder) Encode(pcm []int16) []byte {
	if e.rs != nil {
		e.pcm = e.rs.Process(e.pcm, pcm)
		pcm = e.pcm
	}
	n := len(pcm) * e.enc.BytesPerSample()
	if cap(e.out) < n {
		e.out = make([]byte, n)
	}
	out := e.out[:n]
	switch e.enc {
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

// EncodeLE converts whole 16-bit little-endian samples (a trailing odd byte is ignored).
func (e *Encoder) EncodeLE(le []byte) []byte {
	n := len(le) / 2
	if cap(e.in) < n {
		e.in = make([]int16, n)
	}
	pcm := e.in[:n]
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(le[2*i:]))
	}
	return e.Encode(pcm)
}
