package phone

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/audio/g711"
)

// What a test or a load script does with a call (speak, press keys, inject faults) and
// what it reads back (the recording).

func (c *Call) say(mulaw []byte) *utterance {
	u := &utterance{audio: bytes.Clone(mulaw), done: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.ended:
		close(u.done)
	case len(mulaw) == 0:
		u.sent = true
		close(u.done)
	default:
		c.says = append(c.says, u)
	}
	return u
}

// Say queues caller speech (8 kHz mu-law) to be streamed after anything queued before it,
// at real-time pace, and returns at once. The channel is closed when the last frame has
// been sent, or when the call ends first. mulaw is copied.
func (c *Call) Say(mulaw []byte) <-chan struct{} { return c.say(mulaw).done }

// SayAndWait queues caller speech and waits until its last frame has been sent. It fails
// with ErrEnded if the call ends first, or with ctx's error.
func (c *Call) SayAndWait(ctx context.Context, mulaw []byte) error {
	u := c.say(mulaw)
	select {
	case <-u.done:
	case <-ctx.Done():
		return fmt.Errorf("phone: say: %w", context.Cause(ctx))
	}
	c.mu.Lock()
	sent := u.sent
	c.mu.Unlock()
	if !sent {
		return fmt.Errorf("phone: say: %w before all audio was sent", ErrEnded)
	}
	return nil
}

// Silence is d of mu-law silence, for building caller scripts with pauses.
func Silence(d time.Duration) []byte {
	return bytes.Repeat([]byte{g711.MulawSilence}, audioBytes(d))
}

// DTMF sends a dtmf event for one key press: 0-9, * or #.
func (c *Call) DTMF(digit string) error {
	if len(digit) != 1 || !strings.Contains("0123456789*#", digit) {
		return fmt.Errorf("phone: dtmf digit %q: want one of 0-9 * #", digit)
	}
	return c.enqueue(outItem{kind: outDTMF, text: digit})
}

// SendRaw writes text to Handset as one text frame, exactly as given, in order with the
// other messages: for fault injection (malformed JSON, bad base64, unknown events).
func (c *Call) SendRaw(text string) error {
	return c.enqueue(outItem{kind: outRaw, text: text})
}

func (c *Call) enqueue(it outItem) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return ErrEnded
	}
	c.out = append(c.out, it)
	c.wakeWriter()
	return nil
}

// Snapshot returns the recording so far.
func (c *Call) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotLocked()
}

func (c *Call) snapshotLocked() Snapshot {
	return Snapshot{Events: c.events[:len(c.events):len(c.events)], Ended: c.ended, Ending: c.ending, Counters: c.counters}
}

// Counters returns the call's audio totals so far; unlike the audio events, they are kept
// with Options.Lean too.
func (c *Call) Counters() Counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counters
}

// Events is the timeline so far. The elements are shared and must not be modified.
func (c *Call) Events() []Event { return c.Snapshot().Events }

// PlayedAudio is the mu-law the caller has heard so far.
func (c *Call) PlayedAudio() []byte { return c.Snapshot().PlayedAudio() }

// Clears is how many clear messages Handset has sent.
func (c *Call) Clears() int { return c.Snapshot().Clears() }

// Marks lists Handset's marks so far with their echoes.
func (c *Call) Marks() []Mark { return c.Snapshot().Marks() }

// ProtocolErrors lists what Handset sent that Twilio would have rejected.
func (c *Call) ProtocolErrors() []Event { return c.Snapshot().ProtocolErrors() }

// SpeechSegments are the runs of speech the caller has heard so far.
func (c *Call) SpeechSegments() []SpeechSegment { return c.Snapshot().SpeechSegments() }

// HeardSpeech reports whether the caller heard speech overlapping [from, to).
func (c *Call) HeardSpeech(from, to time.Duration) bool {
	return c.Snapshot().HeardSpeech(from, to)
}

// WaitFor blocks until cond holds over the recording, re-checking on every new event. It
// fails with ErrEnded if the call ends with cond still false, or with ctx's error; both
// errors describe the recording. A change of the counters alone wakes no one (with
// Options.Lean a waiter would otherwise run every 20 ms): poll Counters to wait on them.
func (c *Call) WaitFor(ctx context.Context, cond func(Snapshot) bool) error {
	for {
		c.mu.Lock()
		s, changed := c.snapshotLocked(), c.changed
		c.watched = true
		c.mu.Unlock()
		if cond(s) {
			return nil
		}
		if s.Ended {
			return fmt.Errorf("phone: wait: %w with the condition unmet: %v", ErrEnded, s)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("phone: wait: %w: %v", context.Cause(ctx), s)
		}
	}
}
