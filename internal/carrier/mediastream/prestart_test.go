package mediastream

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/handset-voice/handset/internal/audio"
)

// recordingSink writes down what a leg hands the call, one line per event.
type recordingSink struct{ events []string }

func (s *recordingSink) Audio(f []byte) {
	s.events = append(s.events, fmt.Sprintf("audio %d×%d", len(f), f[0]))
}
func (s *recordingSink) Mark(name string)    { s.events = append(s.events, "mark "+name) }
func (s *recordingSink) DTMF(digit string)   { s.events = append(s.events, "dtmf "+digit) }
func (s *recordingSink) Malformed(err error) { s.events = append(s.events, "malformed") }

func TestPreStartReplaysInOrder(t *testing.T) {
	p := NewPreStart(audio.Telephone)
	frame := make([]byte, 160)
	for i, step := range []func() error{
		func() error { frame[0] = 1; return p.Media(frame) },
		func() error { return p.DTMF("5") },
		func() error { frame[0] = 2; return p.Media(frame) },
		func() error { return p.Other(errors.New("an unknown event")) },
		func() error { return p.DTMF("#") },
	} {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	frame[0] = 9 // the caller reuses its buffer: what was kept is a copy
	var s recordingSink
	p.Replay(&s)
	want := []string{"audio 160×1", "dtmf 5", "audio 160×2", "malformed", "dtmf #"}
	if !slices.Equal(s.events, want) {
		t.Errorf("replayed %v, want %v", s.events, want)
	}
	if p.Len() != 0 {
		t.Errorf("%d frames left after the replay", p.Len())
	}
	s.events = nil
	p.Replay(&s)
	if len(s.events) != 0 {
		t.Errorf("a second replay: %v", s.events)
	}
}

// At most a second of early audio is kept; more is counted as malformed; past
// MaxEarlyFrames in all, the stream is refused.
func TestPreStartBounds(t *testing.T) {
	p := NewPreStart(audio.Telephone)
	frame := bytes.Repeat([]byte{7}, audio.Telephone.FrameBytes())
	second := int(MaxEarlyAudio / audio.FrameDuration)
	for i := range MaxEarlyFrames {
		if err := p.Media(frame); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	for _, err := range []error{p.Media(frame), p.DTMF("1"), p.Other(nil)} {
		if !errors.Is(err, ErrTooEarly) {
			t.Errorf("frame %d: %v, want ErrTooEarly", MaxEarlyFrames+1, err)
		}
	}
	var s recordingSink
	p.Replay(&s)
	audioFrames := 0
	for _, e := range s.events {
		if e == "audio 160×7" {
			audioFrames++
		}
	}
	if audioFrames != second || len(s.events) != MaxEarlyFrames {
		t.Errorf("kept %d frames of audio (want %d, a second) of %d events (want %d)", audioFrames, second, len(s.events), MaxEarlyFrames)
	}
}
