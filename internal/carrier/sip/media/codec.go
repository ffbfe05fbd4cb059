package media

import (
	"fmt"

	"github.com/handset-voice/handset/internal/audio"
)

// Codec is the audio payload a session exchanges: the RTP payload type the SDP answer
// bound to it and the audio format the call speaks through it.
type Codec struct {
	PayloadType uint8
	Format      audio.Format
	// Wire is how the payload carries Format: the zero value carries Format's own bytes;
	// WireG722 carries G.722 code (see G722).
	Wire Wire
}

// Wire is the payload's coding of a codec's Format.
type Wire uint8

// Wires the session speaks.
const (
	WireRaw  Wire = iota // the payload is Format's bytes (G.711, linear PCM)
	WireG722             // the payload is G.722 code; Format is 16 kHz PCM16
)

// The static G.711 payload types (RFC 3551), 8000 samples per second.
var (
	PCMU = Codec{PayloadType: 0, Format: audio.Format{Encoding: audio.Mulaw, Rate: 8000}}
	PCMA = Codec{PayloadType: 8, Format: audio.Format{Encoding: audio.Alaw, Rate: 8000}}
)

// comfortNoisePT is RFC 3389 comfort noise: peers send it during silence; it carries no
// audio the call needs, so it is accepted and ignored.
const comfortNoisePT = 13

func (c Codec) String() string { return fmt.Sprintf("pt %d %s", c.PayloadType, c.Format) }

// validate refuses a codec the session cannot clock: unknown encodings, rates that do not
// cut into whole 20 ms frames, dynamic payload types out of the 7-bit range.
func (c Codec) validate() error {
	if c.PayloadType > 127 {
		return fmt.Errorf("media: payload type %d is out of range (0-127)", c.PayloadType)
	}
	if c.Wire != WireRaw {
		return c.validateCoded()
	}
	if c.PayloadType == comfortNoisePT {
		return fmt.Errorf("media: payload type %d is comfort noise, not audio", c.PayloadType)
	}
	switch c.Format.Encoding {
	case audio.Mulaw, audio.Alaw, audio.PCM16:
	default:
		return fmt.Errorf("media: codec %s: unsupported encoding", c)
	}
	if c.Format.Rate < 8000 || c.Format.Rate > 48000 || c.Format.Rate%50 != 0 {
		return fmt.Errorf("media: codec %s: rate must be 8000-48000 and a multiple of 50", c)
	}
	return nil
}

// wireShape is how a codec's payload maps onto RTP time: what the jitter buffer places
// and the sender numbers. For raw codecs it is the format itself.
type wireShape struct {
	clockRate int  // RTP timestamp units per second
	unitBytes int  // payload bytes per timestamp unit
	filler    byte // what fills a gap in a received frame
}

func (w wireShape) frameUnits() int { return w.clockRate / 50 }
func (w wireShape) frameBytes() int { return w.frameUnits() * w.unitBytes }

func (c Codec) wire() wireShape {
	if c.Wire == WireG722 {
		return g722Shape
	}
	e := c.Format.Encoding
	return wireShape{clockRate: c.Format.Rate, unitBytes: e.BytesPerSample(), filler: silenceByte(e)}
}

// silenceByte is the encoded zero sample of an encoding: what comfort silence and
// concealed losses are filled with.
func silenceByte(e audio.Encoding) byte {
	switch e {
	case audio.Mulaw:
		return 0xFF
	case audio.Alaw:
		return 0xD5
	}
	return 0
}
