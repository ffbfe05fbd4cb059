package sip

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/handset-voice/handset/internal/voice"
)

// A BYE may overtake the ACK of the 200 OK. Audio queued for the caller meanwhile (the
// greeting) then has no one to play to: that is a hang-up, not a media failure, or the
// call would end as media_error instead of caller_hangup.
func TestAudioForACallerWhoHungUpBeforeTheAckIsNoFault(t *testing.T) {
	ctx := context.Background()
	l := legOf(slog.New(slog.DiscardHandler), nil, voice.LegInfo{}, nil, nil, func() {})
	l.end(nil) // the BYE
	if err := l.SendAudio(ctx, make([]byte, 160)); err != nil {
		t.Errorf("SendAudio after the caller's BYE: %v, want nothing to report", err)
	}
	failed := legOf(slog.New(slog.DiscardHandler), nil, voice.LegInfo{}, nil, nil, func() {})
	broke := errors.New("the dialog failed")
	failed.end(broke)
	if err := failed.SendAudio(ctx, make([]byte, 160)); !errors.Is(err, errEnded) {
		t.Errorf("SendAudio after a failed dialog: %v, want errEnded", err)
	}
}
