package fakeopenclaw_test

import (
	"strings"
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

// frames reads until done holds for the frames read so far (seen, then more), and
// returns them all.
func (c *client) frames(seen []frame, done func(seen []frame) bool) []frame {
	c.t.Helper()
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

// outcome returns the second answer of an "agent" request among frames: its run's outcome.
func outcome(frames []frame, id string) map[string]any {
	n := 0
	for _, f := range frames {
		if f.Type == "res" && f.ID == id {
			if n++; n == 2 {
				return f.Payload
			}
		}
	}
	return nil
}

// promptOf returns the prompt of runID as it reached the model.
func promptOf(f *fakeopenclaw.Server, runID string) (fakeopenclaw.Prompt, bool) {
	for _, p := range f.Prompts() {
		if p.RunID == runID {
			return p, true
		}
	}
	return fakeopenclaw.Prompt{}, false
}

func queuedBehind(f *fakeopenclaw.Server, runID string) string {
	for _, s := range f.Sends() {
		if s.IdempotencyKey == runID {
			return s.QueuedBehind
		}
	}
	return "(not sent)"
}

// TestAgentWaitsForTheRunningRun: an "agent" request to a session with a run going is
// acknowledged as usual and runs, under its own id, once that run is over; a run aborted
// after its prompt started leaves the transcript but its words open the next prompt.
func TestAgentWaitsForTheRunningRun(t *testing.T) {
	f, url := start(t, fakeopenclaw.Options{})
	c := connected(t, url)
	c.send(agentReq("s1", "a", "TOOLCALL first"))
	c.send(agentReq("s2", "b", "second"))
	seen := c.frames(nil, func(seen []frame) bool { _, ok := answer(seen, "s2"); return ok })
	if ack, _ := answer(seen, "s2"); ack.Payload["runId"] != "b" || ack.Payload["status"] != "accepted" || ack.Payload["sessionKey"] != sessionKey {
		t.Fatalf("ack of the waiting message %+v", ack.Payload)
	}
	if got := queuedBehind(f, "b"); got != "a" {
		t.Errorf("the second message waited behind %q, want a", got)
	}
	c.send(abortReq("x1", "a"))
	seen = c.frames(seen, func(seen []frame) bool { return ended(seen, "b") != "" && outcome(seen, "s2") != nil })
	if a, b := ended(seen, "a"), ended(seen, "b"); a != "aborted" || b != "final" {
		t.Fatalf("the first run ended %q, the second %q; want aborted, then final", a, b)
	}
	if o := outcome(seen, "s1"); o["status"] != "timeout" || o["summary"] != "aborted" {
		t.Errorf("the aborted run's outcome %v", o)
	}
	if o := outcome(seen, "s2"); o["status"] != "ok" || o["summary"] != "completed" {
		t.Errorf("the second run's outcome %v", o)
	}
	p, ok := promptOf(f, "b")
	if !ok || p.Message != "second" || len(p.Folded) != 1 || p.Folded[0] != "TOOLCALL first" ||
		!strings.HasPrefix(p.Text(), fakeopenclaw.FoldedPrefix+"\nTOOLCALL first\n\nsecond") {
		t.Errorf("the second run's prompt %+v, want the aborted run's words folded in front", p)
	}
	if got := users(f); len(got) != 1 || got[0] != "second" {
		t.Errorf("the session kept %q; want only the run that finished", got)
	}
}

// TestChatSendWaitsUnderAnotherRunID: chat.send to a busy session is acknowledged as
// started and at once given an empty final; its reply comes later, in a run under an id
// the gateway makes.
func TestChatSendWaitsUnderAnotherRunID(t *testing.T) {
	f, url := start(t, fakeopenclaw.Options{ToolCallFor: 50 * time.Millisecond})
	c := connected(t, url)
	c.send(agentReq("s1", "a", "TOOLCALL first"))
	c.send(map[string]any{"type": "req", "id": "s2", "method": "chat.send",
		"params": map[string]any{"sessionKey": "handset:call:1", "message": "second", "idempotencyKey": "b"}})
	var other string
	seen := c.frames(nil, func(seen []frame) bool {
		for _, p := range f.Prompts() {
			if p.Message == "second" {
				other = p.RunID
			}
		}
		return other != "" && ended(seen, other) != ""
	})
	if ack, _ := answer(seen, "s2"); ack.Payload["runId"] != "b" || ack.Payload["status"] != "started" {
		t.Fatalf("ack %+v", ack.Payload)
	}
	var bEvents []map[string]any
	for _, fr := range seen {
		if fr.Event == "chat" && fr.Payload["runId"] == "b" {
			bEvents = append(bEvents, fr.Payload)
		}
	}
	if len(bEvents) != 1 || bEvents[0]["state"] != "final" || bEvents[0]["message"] != nil {
		t.Errorf("events of b %v, want one final without a message", bEvents)
	}
	if other == "b" || ended(seen, "a") != "final" || ended(seen, other) != "final" {
		t.Errorf("the reply to the chat.send ran as %q; runs ended a %q, it %q", other, ended(seen, "a"), ended(seen, other))
	}
}

// TestAbortWaitingRun: aborting a message still waiting for its session drops it before it
// reaches the model: an aborted event, the abort's answer, the request's outcome.
func TestAbortWaitingRun(t *testing.T) {
	f, url := start(t, fakeopenclaw.Options{})
	c := connected(t, url)
	c.send(agentReq("s1", "a", "TOOLCALL first"))
	c.send(agentReq("s2", "b", "second"))
	c.send(abortReq("x1", "b"))
	seen := c.frames(nil, func(seen []frame) bool { return outcome(seen, "s2") != nil })
	if ended(seen, "b") != "aborted" {
		t.Errorf("the waiting run ended %q, want aborted", ended(seen, "b"))
	}
	if ab, _ := answer(seen, "x1"); ab.Payload["aborted"] != true || len(ab.Payload["runIds"].([]any)) != 1 {
		t.Errorf("abort answer %+v", ab.Payload)
	}
	if o := outcome(seen, "s2"); o["summary"] != "aborted" {
		t.Errorf("outcome %v", o)
	}
	if _, ok := promptOf(f, "b"); ok {
		t.Error("the aborted waiting message reached the model")
	}
}

// TestResetNeedsAdmin: a command through the agent method needs operator.admin; the same
// words escaped as speech are a turn like any other.
func TestResetNeedsAdmin(t *testing.T) {
	_, url := start(t, fakeopenclaw.Options{})
	c := connected(t, url)
	c.send(agentReq("s1", "r", "/reset"))
	if f := c.res("s1"); f.OK || f.Error["code"] != "FORBIDDEN" || f.Error["details"].(map[string]any)["missingScope"] != "operator.admin" {
		t.Fatalf("answer to /reset %+v", f)
	}
	c.send(agentReq("s2", "s", "(spoken) /reset"))
	if f := c.res("s2"); !f.OK {
		t.Fatalf("answer to the spoken words %+v", f)
	}
	if evs, _ := c.chat("s"); evs[len(evs)-1]["state"] != "final" {
		t.Errorf("the spoken words' run ended %v", evs[len(evs)-1])
	}
}

// TestInterruptAbortsTheRunningRun: queueMode "interrupt" aborts the session's run at once
// and starts the new message's own run; the ack says so.
func TestInterruptAbortsTheRunningRun(t *testing.T) {
	f, url := start(t, fakeopenclaw.Options{})
	c := connected(t, url)
	c.send(agentReq("s1", "a", "TOOLCALL first"))
	b := agentReq("s2", "b", "second")
	b["params"].(map[string]any)["queueMode"] = "interrupt"
	c.send(b)
	seen := c.frames(nil, func(seen []frame) bool { return ended(seen, "a") != "" && ended(seen, "b") != "" })
	if ack, _ := answer(seen, "s2"); ack.Payload["runId"] != "b" || ack.Payload["interruptedActiveRun"] != true {
		t.Fatalf("ack %+v, want runId b and interruptedActiveRun", ack.Payload)
	}
	if a, b := ended(seen, "a"), ended(seen, "b"); a != "aborted" || b != "final" {
		t.Fatalf("the interrupted run ended %s, the interrupting one %s; want aborted, final", a, b)
	}
	if got := queuedBehind(f, "b"); got != "" {
		t.Errorf("the interrupting message waited behind %q", got)
	}
}

// TestSlowAbortKeepsTheSessionBusy: until a slow chat.abort acts, its run goes on and a
// message sent to the session waits for it; the abort is answered once the run is gone.
func TestSlowAbortKeepsTheSessionBusy(t *testing.T) {
	f, url := start(t, fakeopenclaw.Options{AbortAnswerDelay: time.Second})
	c := connected(t, url)
	c.send(agentReq("s1", "a", "TOOLCALL first"))
	c.res("s1")
	c.send(abortReq("x1", "a"))
	c.send(agentReq("s2", "b", "sent at once"))
	seen := c.frames(nil, func(seen []frame) bool { return ended(seen, "b") != "" })
	if got := queuedBehind(f, "b"); got != "a" {
		t.Fatalf("the message sent before the abort's answer waited behind %q, want a", got)
	}
	var order []string
	for _, fr := range seen {
		switch {
		case fr.Type == "res" && fr.ID == "x1":
			order = append(order, "abort answered")
		case fr.Event == "chat" && fr.Payload["state"] == "aborted":
			order = append(order, "a aborted")
		case fr.Event == "chat" && fr.Payload["runId"] == "b" && fr.Payload["state"] == "final":
			order = append(order, "b final")
		}
	}
	if strings.Join(order, ", ") != "a aborted, abort answered, b final" {
		t.Errorf("order %q", order)
	}
}

// TestUnansweredAbortStillStops: with AbortUnanswered the run is aborted and the abort
// never answered (it would come before the run's outcome); later requests are answered.
func TestUnansweredAbortStillStops(t *testing.T) {
	_, url := start(t, fakeopenclaw.Options{AbortUnanswered: true})
	c := connected(t, url)
	c.send(agentReq("s1", "a", "TOOLCALL first"))
	c.send(abortReq("x1", "a"))
	c.send(map[string]any{"type": "req", "id": "l", "method": "agents.list", "params": map[string]any{}})
	seen := c.frames(nil, func(seen []frame) bool { _, ok := answer(seen, "l"); return ok && outcome(seen, "s1") != nil })
	if _, ok := answer(seen, "x1"); ok {
		t.Error("the abort was answered")
	}
	if ended(seen, "a") != "aborted" {
		t.Error("the run was not aborted")
	}
}
