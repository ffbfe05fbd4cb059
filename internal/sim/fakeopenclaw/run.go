package fakeopenclaw

import (
	"context"
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

// sleep waits for d; false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
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

// run plays lr, then ends it (leave).
func (s *Server) run(lr *liveRun) {
	defer s.wg.Done()
	reply, finished := s.play(lr)
	s.leave(lr, reply, finished)
}

// answerOutcome is the second answer the real gateway gives an "agent" request, once its
// run is over: completed or aborted (it was not seen for a failed run).
func (s *Server) answerOutcome(lr *liveRun, reply string, finished bool) {
	switch {
	case lr.method != "agent" || s.ctx.Err() != nil:
	case finished:
		s.reply(lr.origin, lr.reqID, map[string]any{"runId": lr.id, "status": "ok", "summary": "completed",
			"result": map[string]any{"payloads": []map[string]any{{"text": reply, "mediaUrl": nil}}}}, nil)
	case lr.ctx.Err() != nil:
		s.reply(lr.origin, lr.reqID, map[string]any{"runId": lr.id, "status": "timeout", "summary": "aborted", "stopReason": "rpc"}, nil)
	}
}

// play streams one run's events to every client and returns its reply, and whether the
// run finished (rather than failed, was aborted or lost).
func (s *Server) play(lr *liveRun) (string, bool) {
	ctx := lr.ctx
	ev := &chatEvents{s: s, runID: lr.id, key: lr.key}
	words := magicWords(lr.message)
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
		if sleep(ctx, d) {
			return true
		}
		stopped()
		return false
	}
	tool := func(n int, phase string) {
		item := map[string]any{"itemId": fmt.Sprintf("tool:%d", n), "toolCallId": strconv.Itoa(n), "name": "web_search",
			"kind": "tool", "phase": phase, "title": "Search the web", "status": map[string]string{"start": "running", "end": "completed"}[phase]}
		s.broadcast("agent", map[string]any{"runId": lr.id, "sessionKey": lr.key, "stream": "item", "data": item})
	}

	if lr.method == "chat.send" { // the agent method has no chat status events
		ev.send("status", map[string]any{"phase": "preparing_context"})
	}
	if words["TOOLCALL"] {
		tool(1, "start")
		if !wait(s.opts.ToolCallFor) {
			return "", false
		}
		tool(1, "end")
	}
	for n := 1; words["TOOLLOOP"]; n++ {
		tool(n, "start")
		tool(n, "end")
		if !wait(s.opts.ToolEvery) {
			return "", false
		}
	}
	switch {
	case words["DOUBLEERROR"]:
		ev.send("error", map[string]any{"errorMessage": "LLM request failed: provider rejected the request schema or tool payload.",
			"errorDetail": map[string]any{"provider": "fake", "httpStatus": 400}})
		ev.seq = 0
		ev.send("error", map[string]any{"errorMessage": "⚠️ Agent failed before reply."})
		return "", false
	case words["FAIL400"]:
		ev.send("error", map[string]any{"errorMessage": "LLM request failed: 400", "errorDetail": map[string]any{"provider": "fake", "httpStatus": 400}})
		return "", false
	case words["FAIL500"]:
		ev.send("error", map[string]any{"errorMessage": "LLM request failed: 500", "errorDetail": map[string]any{"provider": "fake", "httpStatus": 500}})
		return "", false
	}
	for i, piece := range strings.SplitAfter(ReplyText(lr.message), " ") {
		if words["SLOW"] && !wait(s.opts.SlowEvery) || stopped() {
			return "", false
		}
		sent += piece
		ev.send("delta", map[string]any{"deltaText": piece, "message": assistantMessage(sent)})
		if i == 0 && lr.dropLate {
			s.dropAfterQueued(lr.origin)
			return "", false
		}
	}
	// As the real gateway reports a run's usage: an agent event with the output tokens so
	// far (a token a word here), before the final; input tokens are never sent.
	s.broadcast("agent", map[string]any{"runId": lr.id, "sessionKey": lr.key, "stream": "usage",
		"data": map[string]any{"outputTokens": len(strings.Fields(sent))}})
	ev.seq-- // the final repeats the last delta's seq
	ev.send("final", map[string]any{"stopReason": "stop", "message": assistantMessage(sent)})
	return sent, true
}
