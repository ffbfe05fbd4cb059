package realopenclaw

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
)

// queueMarker marks the turn the LLM holds in testQueue. It is no magic word of the fake
// LLM: the gateway folds the held turn's words into the next prompt, which must be answered.
const queueMarker = "hold-the-first-turn"

// holdFirst holds the first chat request whose body carries marker until its client goes
// away (the gateway aborting that run); held is closed when it arrives.
func holdFirst(next http.Handler, marker string, held chan struct{}) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		hold := false
		if err == nil && bytes.Contains(body, []byte(marker)) {
			once.Do(func() { hold = true; close(held) })
		}
		if hold {
			<-r.Context().Done()
			return
		}
		next.ServeHTTP(w, r)
	})
}

// testQueue: an "agent" request sent while the session's run is going is acknowledged as
// usual and waits; when that run is aborted it runs under its own id, its prompt opening
// with the aborted run's words (fakeopenclaw.FoldedPrefix), and only it stays in the
// session's history. The fake gateway does the same.
func testQueue(ctx context.Context, t *testing.T, gw *Gateway, fake *fakeopenai.Server, held chan struct{}) {
	cl := dial(ctx, t, gw)
	session := "agent:" + testAgent + ":handset-ws-queue"
	first, second := "hs-q1-"+randomHex(6), "hs-q2-"+randomHex(6)
	cl.request("agent", map[string]any{"sessionKey": session, "message": "first words " + queueMarker, "idempotencyKey": first})
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the LLM never got the first turn")
	}
	ackID := cl.request("agent", map[string]any{"sessionKey": session, "message": "second words", "idempotencyKey": second})
	var ack struct{ RunID, Status string }
	_ = json.Unmarshal(cl.response(ctx, ackID), &ack)
	if ack.RunID != second || ack.Status != "accepted" {
		t.Errorf("ack of the message sent to the busy session %+v, want its own runId, accepted", ack)
	}
	abortID := cl.request("chat.abort", map[string]any{"sessionKey": session, "runId": first})
	var order []string
	var final chatEvent
	for final.State == "" {
		f := cl.read(ctx)
		switch {
		case f.Type == "res" && f.ID == abortID:
			order = append(order, "abort answered")
		case f.Type == "event" && f.Event == "chat":
			var e chatEvent
			_ = json.Unmarshal(f.Payload, &e)
			switch {
			case e.RunID == first && e.State == "aborted":
				order = append(order, "first aborted")
			case e.RunID == second && (e.State == "final" || e.State == "error" || e.State == "aborted"):
				final = e
				order = append(order, "second "+e.State)
			}
		}
	}
	if strings.Join(order, ", ") != "first aborted, abort answered, second final" {
		t.Errorf("order %q, want the first run aborted, the abort answered, then the second run's final", order)
	}
	r := findRequest(t, fake, "second words")
	prompt := ""
	for _, m := range r.Messages {
		if m.Role == "user" && strings.Contains(m.Content, "second words") {
			prompt = m.Content
		}
	}
	if !strings.Contains(prompt, fakeopenclaw.FoldedPrefix+"\nfirst words "+queueMarker+"\n\nsecond words") {
		t.Errorf("the second run's prompt %q, want the first run's words folded in front of it as the fake gateway writes them", prompt)
	}
	histID := cl.request("chat.history", map[string]any{"sessionKey": session})
	var hist struct {
		Messages []struct {
			Role    string
			Content json.RawMessage
		}
	}
	_ = json.Unmarshal(cl.response(ctx, histID), &hist)
	var users []string
	for _, m := range hist.Messages {
		var text string
		if m.Role == "user" && json.Unmarshal(m.Content, &text) == nil {
			users = append(users, text)
		}
	}
	if len(users) != 1 || users[0] != "second words" {
		t.Errorf("the session kept the user messages %q, want only the run that finished", users)
	}
}
