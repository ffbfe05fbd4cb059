// Package audio owns the shape of sound inside Handset: the wire formats a leg or provider
// speaks, frame sizes and durations. Codecs, resampling, VAD, rings and pacing live in
// subpackages so each per-frame path can be tested and benchmarked alone.
package audio

import (
	"fmt"
	"time"
)

// Encoding is how samples are stored on a wire.
type Encoding uint8

// Encodings Handset speaks. PCM16 is signed 16-bit little-endian linear PCM.
const (
	PCM16 Encoding = iota + 1
	Mulaw
	Alaw
)

func (e Encoding) String() string {
	switch e {
	case PCM16:
		return "pcm16"
	case Mulaw:
		return "mulaw"
	case Alaw:
		return "alaw"
	}
	return fmt.Sprintf("encoding(%d)", uint8(e))
}

// BytesPerSample is the size of one mono sample on the wire.
func (e Encoding) BytesPerSample() int {
	if e == PCM16 {
		return 2
	}
	return 1
}

// Format is an encoding at a sample rate, always mono.
type Format struct {
	Encoding Encoding
	Rate     int // samples per second
}

// Telephone is what Twilio, Telnyx and Plivo media streams carry: 8 kHz mu-law.
var Telephone = Format{Encoding: Mulaw, Rate: 8000}

func (f Format) String() string { return fmt.Sprintf("%s/%d", f.Encoding, f.Rate) }

// FrameDuration is the media frame every leg exchanges: 20 ms.
const FrameDuration = 20 * time.Millisecond

// FrameBytes is the size of one 20 ms frame in this format.
func (f Format) FrameBytes() int {
	return f.Rate / 50 * f.Encoding.BytesPerSample()
}

// Duration of n bytes of audio in this format.
func (f Format) Duration(n int) time.Duration {
	if f.Rate == 0 {
		return 0
	}
	samples := n / f.Encoding.BytesPerSample()
	return time.Duration(samples) * time.Second / time.Duration(f.Rate)
}

// Bytes is the size of d of audio in this format, rounded down to whole samples.
func (f Format) Bytes(d time.Duration) int {
	return int(d*time.Duration(f.Rate)/time.Second) * f.Encoding.BytesPerSample()
}
