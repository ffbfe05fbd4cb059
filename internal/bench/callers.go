package bench

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

// tally is what the callers have seen so far; safe for concurrent use.
type tally struct {
	started, live, turns                atomic.Int64
	dialFailed, droppedCalls, turnsLost atomic.Int64
	protocolErrors                      atomic.Int64
	mu                                  sync.Mutex
	examples                            []string // the first few errors, for the report
}

const maxExamples = 5

func (t *tally) example(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.examples) < maxExamples {
		t.examples = append(t.examples, fmt.Sprintf(format, args...))
	}
}

// caller is one simulated caller's script: it calls, waits for the greeting, then says an
// utterance, waits for the reply to play to its end, pauses, and goes again until stop.
type caller struct {
	n        int
	opts     Options
	tally    *tally
	log      *slog.Logger
	stop     <-chan struct{}
	finished chan struct{} // closed when the caller has hung up
}

// endMarks counts the reply ends the carrier has played: the "t<N>-end" marks a media
// stream returns (not cleared), or on an audio-only line (SIP), which has no marks, the
// ends of replies the phone heard in the audio (phone.ReplyEnded). A line has one kind or
// the other, so the sum is whichever it has.
func endMarks(s phone.Snapshot) int {
	n := s.ReplyEnds()
	for _, m := range s.Marks() {
		if m.Echoed && !m.Cleared && strings.HasSuffix(m.Name, "-end") {
			n++
		}
	}
	return n
}

func (c *caller) run(ctx context.Context) {
	defer close(c.finished)
	c.tally.started.Add(1)
	call, err := c.opts.Vendor.Call(ctx, c.opts.BaseURL, simkit.CallOptions{From: fmt.Sprintf("+1555%07d", c.n), Lean: true})
	if err != nil {
		c.tally.dialFailed.Add(1)
		c.tally.example("caller %d: dial: %v", c.n, err)
		return
	}
	c.tally.live.Add(1)
	defer c.tally.live.Add(-1)
	defer func() {
		_ = call.Hangup()
		<-call.Done()
		if n := len(call.ProtocolErrors()); n > 0 {
			c.tally.protocolErrors.Add(int64(n))
			c.tally.example("caller %d: %d protocol errors, first: %v", c.n, n, call.ProtocolErrors()[0])
		}
	}()
	// The greeting (when there is one) plays first; a caller who talks over it is a
	// barge-in test, not a load test.
	if !c.waitReplies(ctx, call, 1, c.opts.ReplyWait) && c.gone(call) {
		return
	}
	for i := 0; ; i++ {
		select {
		case <-c.stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(c.opts.Pause):
		}
		before := endMarks(call.Snapshot())
		utterance := c.opts.Utterances[(c.n+i)%len(c.opts.Utterances)]
		select {
		case <-call.Say(utterance):
		case <-c.stop:
			return
		case <-call.Done():
			c.dropped(call)
			return
		}
		if c.waitReplies(ctx, call, before+1, c.opts.ReplyWait) {
			c.tally.turns.Add(1)
			continue
		}
		if c.gone(call) {
			return
		}
		select {
		case <-c.stop: // stopped while waiting: not a lost turn
			return
		default:
		}
		c.tally.turnsLost.Add(1)
		c.tally.example("caller %d: no reply within %v to utterance %d", c.n, c.opts.ReplyWait, i+1)
	}
}

// waitReplies waits until want replies have played to their end; false on timeout, stop,
// or the call ending.
func (c *caller) waitReplies(ctx context.Context, call phone.Phone, want int, limit time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := call.WaitFor(ctx, func(s phone.Snapshot) bool { return endMarks(s) >= want || s.Ended })
	return err == nil && endMarks(call.Snapshot()) >= want
}

// gone reports (and counts) a call Handset ended under the caller.
func (c *caller) gone(call phone.Phone) bool {
	select {
	case <-call.Done():
		c.dropped(call)
		return true
	default:
		return false
	}
}

func (c *caller) dropped(call phone.Phone) {
	select {
	case <-c.stop:
		return // the bench was ending anyway
	default:
	}
	c.tally.droppedCalls.Add(1)
	e, _ := call.Ending()
	c.tally.example("caller %d: the call ended under the caller: %+v", c.n, e)
}
