package mediastream

import (
	"errors"
	"fmt"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/voice"
)

// MaxEarlyFrames bounds the frames a stream may send before its start: beyond it the
// stream is refused (ErrTooEarly).
const MaxEarlyFrames = 200

// MaxEarlyAudio is how much early media PreStart keeps; later early media is counted as
// malformed.
const MaxEarlyAudio = time.Second

// ErrTooEarly: more frames arrived before the stream's start than MaxEarlyFrames.
var ErrTooEarly = errors.New("too many frames before the stream's start")

// PreStart holds what a carrier sends before the stream's start message (some carriers
// do not order start first): up to a second of media and every DTMF key are kept, anything
// else is counted as malformed; Replay hands them to the call, in order, once it starts.
// It is used once per stream, before the call runs, so it favours plainness over reuse.
type PreStart struct {
	audio  []byte // the kept media, back to back
	limit  int    // MaxEarlyAudio in bytes
	frames []early
}

// early is one frame that came before the start: media (a span of audio), a key, or an
// error to count.
type early struct {
	dtmf     bool
	from, to int
	digit    string
	err      error
}

// NewPreStart returns an empty buffer for media in format f.
func NewPreStart(f audio.Format) *PreStart {
	return &PreStart{limit: f.Bytes(MaxEarlyAudio)}
}

// Media keeps a copy of an early media frame (past a second of audio, it is counted as
// malformed instead).
func (p *PreStart) Media(frame []byte) error {
	if len(p.audio)+len(frame) > p.limit {
		return p.Other(fmt.Errorf("media before the stream's start beyond %v: dropped", MaxEarlyAudio))
	}
	if err := p.room(); err != nil {
		return err
	}
	from := len(p.audio)
	p.audio = append(p.audio, frame...)
	p.frames = append(p.frames, early{from: from, to: len(p.audio)})
	return nil
}

// DTMF keeps an early key press.
func (p *PreStart) DTMF(digit string) error {
	if err := p.room(); err != nil {
		return err
	}
	p.frames = append(p.frames, early{dtmf: true, digit: digit})
	return nil
}

// Other counts an early frame that is neither media nor DTMF: replayed as malformed.
func (p *PreStart) Other(err error) error {
	if err == nil {
		err = errors.New("a message before the stream's start")
	}
	if e := p.room(); e != nil {
		return e
	}
	p.frames = append(p.frames, early{err: err})
	return nil
}

// Len is how many early frames are held.
func (p *PreStart) Len() int { return len(p.frames) }

func (p *PreStart) room() error {
	if len(p.frames) >= MaxEarlyFrames {
		return ErrTooEarly
	}
	return nil
}

// Replay hands the kept frames to sink in the order they came, counts the rest as
// malformed, and empties the buffer.
func (p *PreStart) Replay(sink voice.LegSink) {
	for _, f := range p.frames {
		switch {
		case f.err != nil:
			sink.Malformed(f.err)
		case f.dtmf:
			sink.DTMF(f.digit)
		default:
			sink.Audio(p.audio[f.from:f.to])
		}
	}
	p.audio, p.frames = p.audio[:0], p.frames[:0]
}
