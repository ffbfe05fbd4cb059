package fakeopenclaw_test

import (
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
)

const sessionKey = "agent:main:handset:call:1"

func agentReq(id, runID, msg string) map[string]any {
	return map[string]any{"type": "req", "id": id, "method": "agent",
		"params": map[string]any{"sessionKey": "handset:call:1", "message": msg, "idempotencyKey": runID}}
}

func abortReq(id, runID string) map[string]any {
	return map[string]any{"type": "req", "id": id, "method": "chat.abort",
		"params": map[string]any{"sessionKey": "handset:call:1", "runId": runID}}
}

// users returns the user messages the session kept.
func users(f *fakeopenclaw.Server) []string {
	var out []string
	for _, e := range f.Transcript(sessionKey) {
		if e.Role == "user" {
			out = append(out, e.Text)
		}
	}
	return out
}

// frames reads until done holds for the frames read so far, and returns them.
func (c *client) frames(done func(seen []frame) bool) []frame {
	c.t.Helper()
	var seen []frame
	for !done(seen) {
		seen = append(seen, c.must())
	}
	return seen
}

// answer returns the response to id among frames.
func answer(frames []frame, id string) (frame, bool) {
	for _, f := range frames {
		if f.Type == "res" && f.ID == id {
			return f, true
		}
	}
	return frame{}, false
}

// ended returns the terminal chat state of runID among frames, or "".
func ended(frames []frame, runID string) string {
	for _, f := range frames {
		if st, _ := f.Payload["state"].(string); f.Event == "chat" && f.Payload["runId"] == runID &&
			(st == "final" || st == "error" || st == "aborted") {
			return st
		}
	}
	return ""
}

func steeredInto(f *fakeopenclaw.Server, runID string) string {
	for _, s := range f.Sends() {
		if s.IdempotencyKey == runID {
			return s.SteeredInto
		}
	}
	return "(not sent)"
}

// TestInterruptAbortsTheRunningRun: queueMode "interrupt" aborts the session's run at once
// and starts the new message's own run; the ack says so.
func TestInterruptAbortsTheRunningRun(t *testing.T) {
	f, url := start(t, fakeopenclaw.Options{})
	c := connected(t, url)
	c.send(agentReq("s1", "a", "TOOLCALL first"))
	c.res("s1")
	b := agentReq("s2", "b", "second")
	b["params"].(map[string]any)["queueMode"] = "interrupt"
	c.send(b)
	seen := c.frames(func(seen []frame) bool { return ended(seen, "a") != "" && ended(seen, "b") != "" })
	if ack, _ := answer(seen, "s2"); ack.Payload["runId"] != "b" || ack.Payload["interruptedActiveRun"] != true {
		t.Fatalf("ack %+v, want runId b and interruptedActiveRun", ack.Payload)
	}
	if a, b := ended(seen, "a"), ended(seen, "b"); a != "aborted" || b != "final" {
		t.Fatalf("the interrupted run ended %s, the interrupting one %s; want aborted, final", a, b)
	}
	if into := steeredInto(f, "b"); into != "" {
		t.Errorf("the interrupting message was steered into %q", into)
	}
}

// TestSlowAbortTakesTheNextMessageDown: while a slow chat.abort has not acted, a message
// sent to the session is steered into the dying run and lost with it; a message sent after
// the abort's answer runs on its own.
func TestSlowAbortTakesTheNextMessageDown(t *testing.T) {
	f, url := start(t, fakeopenclaw.Options{AbortAnswerDelay: time.Second})
	c := connected(t, url)
	c.send(agentReq("s1", "a", "TOOLCALL first"))
	c.res("s1")
	c.send(abortReq("x1", "a"))
	c.send(agentReq("s2", "b", "lost words"))
	if ack := c.res("s2"); !ack.OK || ack.Payload["runId"] != "b" {
		t.Fatalf("steered message ack %+v", ack)
	}
	if ab := c.res("x1"); ab.Payload["aborted"] != true {
		t.Fatalf("abort answer %+v", ab.Payload)
	}
	if into := steeredInto(f, "b"); into != "a" {
		t.Fatalf("the message sent before the abort's answer was steered into %q, want a", into)
	}
	c.send(agentReq("s3", "c", "kept words"))
	c.res("s3")
	if evs, _ := c.chat("c"); evs[len(evs)-1]["state"] != "final" {
		t.Fatalf("the message after the abort's answer ended %v", evs[len(evs)-1])
	}
	if got := users(f); len(got) != 2 || got[0] != "TOOLCALL first" || got[1] != "kept words" {
		t.Errorf("the session kept %q; want the aborted run's message and the one after the answer", got)
	}
}

// TestUnansweredAbortStillStops: with AbortUnanswered the run is aborted and the abort
// never answered; later requests are.
func TestUnansweredAbortStillStops(t *testing.T) {
	_, url := start(t, fakeopenclaw.Options{AbortUnanswered: true})
	c := connected(t, url)
	c.send(agentReq("s1", "a", "TOOLCALL first"))
	c.res("s1")
	c.send(abortReq("x1", "a"))
	c.send(map[string]any{"type": "req", "id": "l", "method": "agents.list", "params": map[string]any{}})
	aborted := false
	for {
		fr := c.must()
		if fr.Type == "res" && fr.ID == "x1" {
			t.Fatalf("the abort was answered: %+v", fr)
		}
		if fr.Event == "chat" && fr.Payload["runId"] == "a" && fr.Payload["state"] == "aborted" {
			aborted = true
		}
		if fr.Type == "res" && fr.ID == "l" {
			break
		}
	}
	if !aborted {
		t.Error("the run was not aborted")
	}
}
