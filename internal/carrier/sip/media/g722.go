package media

import (
	"fmt"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g722"
)

// G722 is ITU-T G.722 on its static payload type (RFC 3551): the call speaks 16 kHz
// PCM16, the wire carries one byte of G.722 code per two samples, and RTP timestamps
// count 8000 a second (an error in the original RFC 1890 that every implementation
// keeps), so a 20 ms packet is 160 bytes and 160 timestamp units, as for G.711.
var G722 = Codec{PayloadType: 9, Format: audio.Format{Encoding: audio.PCM16, Rate: 16000}, Wire: WireG722}

// g722Shape is G.722's payload in RTP time. A gap inside a received frame is filled with
// the code the encoder gives silence, so decoding it adapts the decoder as silence would.
var g722Shape = wireShape{clockRate: 8000, unitBytes: 1, filler: 0xFA}

func (c Codec) validateCoded() error {
	if c.Wire != WireG722 {
		return fmt.Errorf("media: codec %s: unknown wire coding %d", c, c.Wire)
	}
	if c.Format != G722.Format {
		return fmt.Errorf("media: codec %s: G.722 speaks %s", c, G722.Format)
	}
	if c.PayloadType > 127 || c.PayloadType == comfortNoisePT {
		return fmt.Errorf("media: codec %s: payload type out of range or comfort noise", c)
	}
	return nil
}

// coder is a session's G.722 state: an encoder on the send clock, a decoder at playout,
// and one frame of the other side of each. Allocated once, when a G.722 codec is first
// configured; per packet nothing allocates.
type coder struct {
	enc     *g722.Encoder
	dec     *g722.Decoder
	pcm     []byte // one 20 ms frame of the call's audio, taken from the send queue
	wire    []byte // one 20 ms frame of code, popped from the jitter buffer
	decoded int64  // the jitter buffer's stream the decoder is decoding
}

// init readies the coder for c: fresh state for a G.722 stream (a new call or a
// re-INVITE that switched codecs), nothing for a raw codec.
func (c *coder) init(codec Codec) {
	if codec.Wire != WireG722 {
		return
	}
	if c.enc == nil {
		c.enc, c.dec = g722.NewEncoder(), g722.NewDecoder()
		c.pcm = make([]byte, G722.Format.FrameBytes())
		c.wire = make([]byte, g722Shape.frameBytes())
	}
	c.enc.Reset()
	c.dec.Reset()
	c.decoded = -1
}

// takeFrame fills one wire frame of the payload to send from the send queue and reports
// whether it carried queued audio. Caller holds mu.
func (s *Session) takeFrame(wire []byte) bool {
	if s.codec.Wire != WireG722 {
		return s.queue.frame(wire, silenceByte(s.codec.Format.Encoding))
	}
	took := s.queue.frame(s.coded.pcm, 0)
	if s.held || !sendable(s.remote) {
		// Not sent: the peer's decoder never sees this frame, so the encoder must not
		// either, or the two adapt apart and the audio after a hold starts distorted.
		return took
	}
	s.coded.enc.Encode(wire[:0], s.coded.pcm) // exactly len(wire) bytes, in place
	return took
}

// popFrame plays one frame of the jitter buffer into dst, in the call's format. Caller
// holds mu.
//
// For G.722, a frame with nothing received (lost, not yet arrived, or the cushion) plays
// as silence and the decoder does not see it: feeding it invented code would move its
// adaptive step and predictor away from the encoder's, while skipping keeps the state of
// the last audio heard, which the leaky adaptation pulls back in step within a few
// milliseconds of the next packet. A frame with a gap decodes the gap as the code of
// silence. A new stream from the peer (SSRC change, timestamp jump) comes from a new
// encoder, so the decoder restarts where that stream starts playing.
func (s *Session) popFrame(dst []byte) {
	if s.codec.Wire != WireG722 {
		if !s.jitter.pop(dst) {
			fill(dst, silenceByte(s.codec.Format.Encoding))
		}
		return
	}
	c, j := &s.coded, s.jitter
	if j.started && j.playhead >= j.streamStart && c.decoded != j.streamStart {
		c.dec.Reset()
		c.decoded = j.streamStart
	}
	if j.pop(c.wire) && j.heard {
		c.dec.Decode(dst[:0], c.wire) // exactly len(dst) bytes, in place
		return
	}
	clear(dst)
}
