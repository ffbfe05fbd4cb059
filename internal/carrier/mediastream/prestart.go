package mediastream

import (
	"errors"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/voice"
)

// MaxEarlyFrames bounds the frames a stream may send before its start: beyond it the
// stream is refused (ErrTooEarly).
const MaxEarlyFrames = 200

// ErrTooEarly: more frames arrived before the stream's start than MaxEarlyFrames.
var ErrTooEarly = errors.New("too many frames before the stream's start")

// PreStart holds what a carrier sends before the stream's start message (some carriers
// do not order start first): up to a second of media and every DTMF key are kept, anything
// else is counted as malformed; Replay hands them to the call, in order, once it starts.
type PreStart struct{}

// NewPreStart returns an empty buffer for media in format f.
func NewPreStart(f audio.Format) *PreStart {
	panic("not yet")
}

// Media keeps a copy of an early media frame (past a second of audio, it is counted as
// dropped instead).
func (p *PreStart) Media(frame []byte) error {
	panic("not yet")
}

// DTMF keeps an early key press.
func (p *PreStart) DTMF(digit string) error {
	panic("not yet")
}

// Other counts an early frame that is neither media nor DTMF: replayed as malformed.
func (p *PreStart) Other(err error) error {
	panic("not yet")
}

// Replay hands the kept frames to sink in the order they came, counts the rest as
// malformed, and empties the buffer.
func (p *PreStart) Replay(sink voice.LegSink) {
	panic("not yet")
}
