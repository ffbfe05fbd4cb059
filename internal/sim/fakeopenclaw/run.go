package fakeopenclaw

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
)

// ReplyText is the fake agent's reply to msg.
func ReplyText(msg string) string {
	return "FAKE-REPLY: you said " + msg + ". That is all from the fake gateway."
}

// chatEvents numbers and broadcasts the chat events of one run id.
type chatEvents struct {
	s          *Server
	runID, key string
	seq        int
}

func (e *chatEvents) send(state string, fields map[string]any) {
	e.seq++
	p := map[string]any{"runId": e.runID, "sessionKey": e.key, "seq": e.seq, "state": state}
	maps.Copy(p, fields)
	e.s.broadcast("chat", p)
}

func assistantMessage(text string) map[string]any {
	return map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": text}}}
}

// run streams one run's events to every client: the reply to its own message, then the
// replies to the messages steered into it, all in its own events; an aborted run takes
// its steered messages with it.
func (s *Server) run(lr *liveRun, msg string, dropLate bool, origin *conn) {
	defer s.wg.Done()
	defer s.leave(lr)
	ctx := lr.ctx
	ev := &chatEvents{s: s, runID: lr.id, key: lr.key}
	words := magicWords(msg)
	sent := ""
	stopped := func() bool {
		if ctx.Err() == nil {
			return false
		}
		if s.ctx.Err() == nil { // chat.abort, not shutdown
			ev.send("aborted", map[string]any{"stopReason": "rpc", "message": assistantMessage(sent)})
		}
		return true
	}
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			stopped()
			return false
		}
	}
	tool := func(n int, phase string) {
		item := map[string]any{"itemId": fmt.Sprintf("tool:%d", n), "toolCallId": strconv.Itoa(n), "name": "web_search",
			"kind": "tool", "phase": phase, "title": "Search the web", "status": map[string]string{"start": "running", "end": "completed"}[phase]}
		s.broadcast("agent", map[string]any{"runId": lr.id, "sessionKey": lr.key, "stream": "item", "data": item})
	}

	ev.send("status", map[string]any{"phase": "preparing_context"})
	s.keep(lr.key, Entry{Role: "user", Text: msg, RunID: lr.id}) // the prompt has started
	if words["TOOLCALL"] {
		tool(1, "start")
		if !wait(s.opts.ToolCallFor) {
			return
		}
		tool(1, "end")
	}
	for n := 1; words["TOOLLOOP"]; n++ {
		tool(n, "start")
		tool(n, "end")
		if !wait(s.opts.ToolEvery) {
			return
		}
	}
	switch {
	case words["DOUBLEERROR"]:
		ev.send("error", map[string]any{"errorMessage": "LLM request failed: provider rejected the request schema or tool payload.",
			"errorDetail": map[string]any{"provider": "fake", "httpStatus": 400}})
		ev.seq = 0
		ev.send("error", map[string]any{"errorMessage": "⚠️ Agent failed before reply."})
		return
	case words["FAIL400"]:
		ev.send("error", map[string]any{"errorMessage": "LLM request failed: 400", "errorDetail": map[string]any{"provider": "fake", "httpStatus": 400}})
		return
	case words["FAIL500"]:
		ev.send("error", map[string]any{"errorMessage": "LLM request failed: 500", "errorDetail": map[string]any{"provider": "fake", "httpStatus": 500}})
		return
	}
	// stream sends text as deltas; false when the run was stopped (or dropped) meanwhile.
	stream := func(text string, first bool) bool {
		for i, piece := range strings.SplitAfter(text, " ") {
			if words["SLOW"] && !wait(s.opts.SlowEvery) || stopped() {
				return false
			}
			sent += piece
			ev.send("delta", map[string]any{"deltaText": piece, "message": assistantMessage(sent)})
			if first && i == 0 && dropLate {
				s.dropAfterQueued(origin)
				return false
			}
		}
		return true
	}
	if !stream(ReplyText(msg), true) {
		return
	}
	var answered []steer
	for {
		next, ok := s.nextSteered(lr)
		if !ok {
			break
		}
		s.keep(lr.key, Entry{Role: "user", Text: next.message, RunID: next.runID})
		if !stream("\n\n"+ReplyText(next.message), false) {
			return
		}
		answered = append(answered, next)
	}
	s.keep(lr.key, Entry{Role: "assistant", Text: sent, RunID: lr.id})
	// As the real gateway reports a run's usage: an agent event with the output tokens so
	// far (a token a word here), before the final; input tokens are never sent.
	s.broadcast("agent", map[string]any{"runId": lr.id, "sessionKey": lr.key, "stream": "usage",
		"data": map[string]any{"outputTokens": len(strings.Fields(sent))}})
	ev.seq-- // the final repeats the last delta's seq
	ev.send("final", map[string]any{"stopReason": "stop", "message": assistantMessage(sent)})
	for _, st := range answered { // their replies went out in this run's events
		(&chatEvents{s: s, runID: st.runID, key: lr.key}).send("final", map[string]any{"stopReason": "stop", "message": assistantMessage("")})
	}
}
