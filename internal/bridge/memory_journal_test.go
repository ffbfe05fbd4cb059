package bridge_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/bridge"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
)

// saidAfterNote picks the user's words out of a turn that carries Handset's note of what
// the runtime missed, so the fake's magic words come from this turn's words only.
func saidAfterNote(msgs []fakehermes.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			_, words, found := strings.Cut(msgs[i].Content, "[The caller now says:]\n")
			if !found {
				return msgs[i].Content
			}
			return words
		}
	}
	return ""
}

// lastSaid is the text of the last message the fake Hermes was sent in its latest request.
func lastSaid(t *testing.T, h *fakehermes.Server) string {
	t.Helper()
	reqs := h.Requests()
	if len(reqs) == 0 || len(reqs[len(reqs)-1].Messages) == 0 {
		t.Fatal("the runtime got no message")
	}
	msgs := reqs[len(reqs)-1].Messages
	return msgs[len(msgs)-1].Content
}

func journal(t *testing.T, dataDir, callID string) []obs.Event {
	t.Helper()
	events, err := obs.ReadFile(filepath.Join(obs.Dir(dataDir, callID), "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func types(events []obs.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Type)
	}
	return out
}

// A voice platform stops speaking where its user cut in, and sends the reply as far as it
// was spoken; a runtime that keeps its own conversation holds the whole reply. The next
// turn tells it what was heard, and the journal has it.
func TestACutOffReplyIsToldToTheRuntimeAsHeard(t *testing.T) {
	dataDir := t.TempDir()
	r := newRig(t, fakehermes.Options{}, hermes.TransportChat, func(o *bridge.Options) { o.DataDir = dataDir })
	room := map[string]string{bridge.HeaderSession: "room-1"}
	ctx := context.Background()

	first := decode(t, r.post(t, ctx, chat(false, "user", "Tell me a story."), room)).Choices[0].Message.Content
	heard := strings.Join(strings.Fields(first)[:3], " ")
	r.post(t, ctx, chat(false, "user", "Tell me a story.", "assistant", heard, "user", "Stop please."), room).Body.Close()
	if got, want := lastSaid(t, r.hermes), "of your reply the caller heard only \u201c"+heard+"\u201d, then interrupted"; !strings.Contains(got, want) {
		t.Fatalf("the runtime was sent %q, want it told %q", got, want)
	}
	second := decode(t, r.post(t, ctx, chat(false, "user", "Tell me a story.", "assistant", heard, "user", "Stop please."), room)).Choices[0].Message.Content
	// heard whole, in the client's own spacing: nothing to tell
	r.post(t, ctx, chat(false, "user", "Tell me a story.", "assistant", heard, "user", "Stop please.",
		"assistant", strings.Join(strings.Fields(second), "  "), "user", "Thanks."), room).Body.Close()
	if got := lastSaid(t, r.hermes); got != "Thanks." {
		t.Errorf("after a reply heard whole the runtime was sent %q, want the words alone", got)
	}

	events := journal(t, dataDir, "bridge-room-1")
	var barge []obs.Event
	for _, e := range events {
		if e.Type == obs.BargeIn {
			barge = append(barge, e)
		}
	}
	if len(barge) != 1 || barge[0].Turn != 1 || barge[0].Text != heard {
		t.Errorf("barge_in events %+v, want one for turn 1 with %q", barge, heard)
	}
	if n := strings.Count(strings.Join(types(events), " "), obs.CallStart); n != 1 || events[0].Type != obs.CallStart {
		t.Errorf("journal %v: want it to begin with its one call.start", types(events))
	}
	if events[0].Carrier != bridge.CarrierName || events[0].Agent == "" {
		t.Errorf("call.start %+v: want carrier %q and the runtime's name", events[0], bridge.CarrierName)
	}
	var done []string
	for _, e := range events {
		if e.Type == obs.AgentDone {
			done = append(done, e.Text)
		}
	}
	if len(done) < 2 || done[0] != first {
		t.Errorf("agent.done texts %q, want the first %q", done, first)
	}
}

// A turn the client stopped may not be in the runtime's memory at all: the next turn tells
// it the user's words again, with what was heard of the reply.
func TestAStoppedTurnIsToldAgain(t *testing.T) {
	dataDir := t.TempDir()
	r := newRig(t, fakehermes.Options{Said: saidAfterNote}, hermes.TransportChat, func(o *bridge.Options) { o.DataDir = dataDir })
	room := map[string]string{bridge.HeaderSession: "room-2"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		body := chat(true, "user", "Book a table HANG")
		body["metadata"] = map[string]any{"session_id": "room-2"} // as the header names it
		r.postUntilGone(ctx, body)
	}()
	waitFor(t, func() bool { return len(r.hermes.Requests()) > 0 })
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
	waitFor(t, func() bool {
		return slices.Contains(types(journal(t, dataDir, "bridge-room-2")), obs.TurnInterrupted)
	})
	r.post(t, context.Background(), chat(false, "user", "Book a table HANG", "user", "Hello?"), room).Body.Close()
	if got := lastSaid(t, r.hermes); !strings.Contains(got, "The caller said: \u201cBook a table HANG\u201d") || !strings.HasSuffix(got, "Hello?") {
		t.Errorf("the runtime was sent %q, want the stopped turn's words told again before the new ones", got)
	}
}

// A session's journal goes on across a restart: one call.start, its ms counted from it.
func TestABridgeJournalGoesOnAfterARestart(t *testing.T) {
	dataDir := t.TempDir()
	room := map[string]string{bridge.HeaderSession: "room-3"}
	for range 2 {
		r := newRig(t, fakehermes.Options{}, hermes.TransportChat, func(o *bridge.Options) { o.DataDir = dataDir })
		r.post(t, context.Background(), chat(false, "user", "Hello."), room).Body.Close()
		time.Sleep(20 * time.Millisecond)
	}
	events := journal(t, dataDir, "bridge-room-3")
	got := types(events)
	want := []string{obs.CallStart, obs.TurnCommit, obs.AgentRequest, obs.AgentFirstToken, obs.AgentDone,
		obs.TurnCommit, obs.AgentRequest, obs.AgentFirstToken, obs.AgentDone}
	if !slices.Equal(got, want) {
		t.Fatalf("journal %v, want %v", got, want)
	}
	if last := events[len(events)-1]; last.MS < 20 || last.MS > 10_000 {
		t.Errorf("the last event is at %d ms, want it counted from the session's first event", last.MS)
	}
}

// A request without a session is journalled under its own id, and nothing of it is kept.
func TestARequestWithoutASessionIsJournalledAlone(t *testing.T) {
	dataDir := t.TempDir()
	r := newRig(t, fakehermes.Options{}, hermes.TransportChat, func(o *bridge.Options) { o.DataDir = dataDir })
	for range 2 {
		r.post(t, context.Background(), chat(false, "user", "Hello."), nil).Body.Close()
	}
	dirs, err := os.ReadDir(filepath.Join(dataDir, "calls"))
	if err != nil || len(dirs) != 2 {
		t.Fatalf("calls folder: %v, %v; want one journal per request", dirs, err)
	}
	for _, d := range dirs {
		if got := types(journal(t, dataDir, d.Name())); len(got) != 5 || got[0] != obs.CallStart {
			t.Errorf("%s: %v", d.Name(), got)
		}
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
