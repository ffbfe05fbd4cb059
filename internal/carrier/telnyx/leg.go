package telnyx

import (
	"context"
	"errors"

	"github.com/handset-voice/handset/internal/voice"
)

// Leg is one Telnyx media stream.
type Leg struct {
	info voice.LegInfo
}

var _ voice.Leg = (*Leg)(nil)

// Info describes the call.
func (l *Leg) Info() voice.LegInfo { return l.info }

// Run reads Telnyx's messages until `stop`, a close, or ctx ends.
func (l *Leg) Run(ctx context.Context, sink voice.LegSink) error {
	return errors.New("telnyx: not implemented yet")
}

// SendAudio sends audio in the stream's codec as one media message.
func (l *Leg) SendAudio(ctx context.Context, audio []byte) error {
	return errors.New("telnyx: not implemented yet")
}

// SendMark asks Telnyx to echo name once everything sent before it has played.
func (l *Leg) SendMark(ctx context.Context, name string) error {
	return errors.New("telnyx: not implemented yet")
}

// Clear drops the audio Telnyx has buffered; the marks still outstanding are reported at
// once, and a late echo of any of them is ignored.
func (l *Leg) Clear(ctx context.Context) error {
	return errors.New("telnyx: not implemented yet")
}
