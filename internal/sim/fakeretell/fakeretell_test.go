package fakeretell_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/sim/fakeretell"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// peer is the server side of one call in these tests: a scripted stand-in for the bridge.
type peer struct {
	conn   *websocket.Conn
	frames chan map[string]any // what the fake sent, in order; closed when the call ends
	path   string
	header http.Header
}

// serve starts a server that runs script for each call and returns the URL to configure
// in Retell. When script returns the call stays up until the fake hangs up.
func serve(t *testing.T, script func(p *peer)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		p := &peer{conn: conn, frames: make(chan map[string]any, 64), path: r.URL.Path, header: r.Header}
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			defer close(p.frames)
			for {
				_, data, err := conn.Read(context.Background())
				if err != nil {
					return
				}
				var ev map[string]any
				if json.Unmarshal(data, &ev) != nil {
					return
				}
				p.frames <- ev
			}
		}()
		script(p)
		for range p.frames { // drain until the fake hangs up
		}
		<-readDone
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/llm-websocket"
}

// Write errors are ignored: they only mean the fake has hung up.
func (p *peer) sendRaw(s string) {
	_ = p.conn.Write(context.Background(), websocket.MessageText, []byte(s))
}

func (p *peer) send(v any) {
	b, _ := json.Marshal(v)
	p.sendRaw(string(b))
}

func (p *peer) config(autoReconnect, callDetails bool) {
	p.send(map[string]any{"response_type": "config",
		"config": map[string]any{"auto_reconnect": autoReconnect, "call_details": callDetails}})
}

func (p *peer) respond(id int, content string, complete bool) {
	p.send(map[string]any{"response_type": "response", "response_id": id, "content": content, "content_complete": complete})
}

// next returns the next event of the given interaction_type, skipping others; nil once
// the call has ended.
func (p *peer) next(kind string) map[string]any {
	for ev := range p.frames {
		if ev["interaction_type"] == kind {
			return ev
		}
	}
	return nil
}

func id(ev map[string]any) int {
	n, _ := ev["response_id"].(float64)
	return int(n)
}

func transcriptOf(ev map[string]any) []fakeretell.Utterance {
	b, _ := json.Marshal(ev["transcript"])
	var t []fakeretell.Utterance
	_ = json.Unmarshal(b, &t)
	return t
}

func dial(t *testing.T, url string, opts fakeretell.Options) *fakeretell.Call {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := fakeretell.Dial(ctx, url, "call_1", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func agent(s string) fakeretell.Utterance { return fakeretell.Utterance{Role: "agent", Content: s} }
func user(s string) fakeretell.Utterance  { return fakeretell.Utterance{Role: "user", Content: s} }

func noViolations(t *testing.T, c *fakeretell.Call) {
	t.Helper()
	if v := c.Violations(); len(v) > 0 {
		t.Errorf("violations:\n%s", strings.Join(v, "\n"))
	}
}

func TestBeginMessageAndStreamedReply(t *testing.T) {
	type seen struct {
		path, header string
		transcript   []fakeretell.Utterance
	}
	got := make(chan seen, 1)
	url := serve(t, func(p *peer) {
		p.config(false, false)
		p.respond(0, "Hello, ", false)
		p.respond(0, "how can I help?", true)
		ev := p.next("response_required")
		got <- seen{p.path, p.header.Get("X-Test"), transcriptOf(ev)}
		for _, d := range []string{"It is ", "three ", "o'clock."} {
			p.respond(id(ev), d, d == "o'clock.")
		}
	})
	ctx := testCtx(t)
	c := dial(t, url, fakeretell.Options{Header: http.Header{"X-Test": {"yes"}}})

	begin, err := c.WaitBegin(ctx)
	if err != nil || begin != "Hello, how can I help?" {
		t.Fatalf("begin = %q, %v", begin, err)
	}
	n, err := c.Say(ctx, "What time is it?")
	if err != nil || n != 1 {
		t.Fatalf("Say = %d, %v", n, err)
	}
	reply, err := c.WaitResponse(ctx, n)
	if err != nil || reply != "It is three o'clock." {
		t.Fatalf("reply = %q, %v", reply, err)
	}
	s := <-got
	if s.path != "/llm-websocket/call_1" || s.header != "yes" {
		t.Errorf("dialled %s with X-Test %q", s.path, s.header)
	}
	if want := []fakeretell.Utterance{agent("Hello, how can I help?"), user("What time is it?")}; !slices.Equal(s.transcript, want) {
		t.Errorf("server got transcript %v, want %v", s.transcript, want)
	}
	want := []fakeretell.Utterance{agent("Hello, how can I help?"), user("What time is it?"), agent("It is three o'clock.")}
	if got := c.Transcript(); !slices.Equal(got, want) {
		t.Errorf("transcript %v, want %v", got, want)
	}
	if cfg, ok := c.Config(); !ok || cfg != (fakeretell.Config{}) {
		t.Errorf("config %+v, %v", cfg, ok)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	noViolations(t, c)
}

func TestRemindAndUpdateOnly(t *testing.T) {
	got := make(chan map[string]any, 2)
	url := serve(t, func(p *peer) {
		p.respond(0, "Anyone there?", true)
		got <- p.next("update_only")
		ev := p.next("reminder_required")
		got <- ev
		p.respond(id(ev), "Hello?", true)
	})
	ctx := testCtx(t)
	c := dial(t, url, fakeretell.Options{})
	if _, err := c.WaitBegin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateOnly(ctx, "user_turn"); err != nil {
		t.Fatal(err)
	}
	n, err := c.Remind(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitResponse(ctx, n); err != nil {
		t.Fatal(err)
	}
	update, remind := <-got, <-got
	if update["turntaking"] != "user_turn" || !slices.Equal(transcriptOf(update), []fakeretell.Utterance{agent("Anyone there?")}) {
		t.Errorf("update_only %v", update)
	}
	if id(remind) != 1 || n != 1 {
		t.Errorf("reminder_required %v, Remind returned %d", remind, n)
	}
	want := []fakeretell.Utterance{agent("Anyone there?"), agent("Hello?")}
	if got := c.Transcript(); !slices.Equal(got, want) {
		t.Errorf("transcript %v, want %v", got, want)
	}
	noViolations(t, c)
}

func TestCallDetailsOnlyWhenAsked(t *testing.T) {
	for _, asked := range []bool{true, false} {
		t.Run(map[bool]string{true: "asked", false: "not asked"}[asked], func(t *testing.T) {
			first := make(chan map[string]any, 1)
			url := serve(t, func(p *peer) {
				p.config(false, asked)
				p.respond(0, "", true)
				first <- <-p.frames
			})
			ctx := testCtx(t)
			c := dial(t, url, fakeretell.Options{From: "+15550001111", To: "+15550002222",
				Direction: "inbound", AgentID: "agent_1", Metadata: map[string]any{"k": "v"}})
			if _, err := c.WaitBegin(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Say(ctx, "hi"); err != nil {
				t.Fatal(err)
			}
			ev := <-first
			if !asked {
				if ev["interaction_type"] != "response_required" {
					t.Fatalf("first event %v, want response_required", ev)
				}
				return
			}
			call, _ := ev["call"].(map[string]any)
			if ev["interaction_type"] != "call_details" || call["call_id"] != "call_1" || call["agent_id"] != "agent_1" ||
				call["from_number"] != "+15550001111" || call["to_number"] != "+15550002222" ||
				call["direction"] != "inbound" || call["call_type"] != "phone_call" {
				t.Fatalf("first event %v, want call_details", ev)
			}
			if md, _ := call["metadata"].(map[string]any); md["k"] != "v" {
				t.Errorf("metadata %v", call["metadata"])
			}
			noViolations(t, c)
		})
	}
}

func TestPingPong(t *testing.T) {
	// PongTimeout is roomy: the race detector and a busy machine stall goroutines for tens of ms.
	opts := fakeretell.Options{PingEvery: 10 * time.Millisecond, PongTimeout: 300 * time.Millisecond}
	// pongServer answers each ping with answer(its timestamp), or not at all when ok is false.
	pongServer := func(pings chan<- int64, answer func(ts int64) (int64, bool)) func(p *peer) {
		return func(p *peer) {
			p.config(true, false)
			p.respond(0, "", true)
			for ev := range p.frames {
				ts := int64(ev["timestamp"].(float64))
				select {
				case pings <- ts:
				default:
				}
				if reply, ok := answer(ts); ok {
					p.send(map[string]any{"response_type": "ping_pong", "timestamp": reply})
				}
			}
		}
	}

	t.Run("echoed", func(t *testing.T) {
		pings := make(chan int64, 100)
		c := dial(t, serve(t, pongServer(pings, func(ts int64) (int64, bool) { return ts, true })), opts)
		var last int64
		for range 5 {
			ts := <-pings
			if ts < last || ts < time.Now().Add(-time.Minute).UnixMilli() {
				t.Fatalf("ping timestamp %d after %d", ts, last)
			}
			last = ts
		}
		time.Sleep(400 * time.Millisecond) // longer than PongTimeout
		if n := c.MissedPongs(); n != 0 {
			t.Errorf("%d missed pongs", n)
		}
		noViolations(t, c)
	})

	t.Run("own clock", func(t *testing.T) {
		pings := make(chan int64, 100)
		c := dial(t, serve(t, pongServer(pings, func(int64) (int64, bool) { return time.Now().UnixMilli() + 1, true })), opts)
		for range 3 {
			<-pings
		}
		noViolations(t, c)
	})

	t.Run("missing", func(t *testing.T) {
		pings := make(chan int64, 100)
		c := dial(t, serve(t, pongServer(pings, func(int64) (int64, bool) { return 0, false })), opts)
		deadline := time.Now().Add(3 * time.Second)
		for c.MissedPongs() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if c.MissedPongs() != 1 {
			t.Fatalf("%d missed pongs, want 1", c.MissedPongs())
		}
		if v := c.Violations(); len(v) != 1 || !strings.Contains(v[0], "no ping_pong") {
			t.Errorf("violations %q", v)
		}
	})

	t.Run("wrong timestamp", func(t *testing.T) {
		pings := make(chan int64, 100)
		c := dial(t, serve(t, pongServer(pings, func(int64) (int64, bool) { return 42, true })), opts)
		<-pings
		deadline := time.Now().Add(3 * time.Second)
		for len(c.Violations()) == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if v := c.Violations(); len(v) == 0 || !strings.Contains(v[0], "timestamp 42") {
			t.Errorf("violations %q", v)
		}
		if c.MissedPongs() != 0 {
			t.Errorf("a wrong timestamp still keeps the call alive; %d missed", c.MissedPongs())
		}
	})
}

func TestInterruptCutsTranscriptAndCountsStale(t *testing.T) {
	// The server streams reply 1 until it notices request 2, then, being slow to stop,
	// sends three more pieces of reply 1 before answering 2.
	url := serve(t, func(p *peer) {
		p.respond(0, "", true)
		first := p.next("response_required")
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case ev, ok := <-p.frames:
				if !ok {
					return
				}
				if ev["interaction_type"] != "response_required" {
					continue
				}
				for range 3 {
					p.respond(id(first), "0123456789", false)
				}
				p.respond(id(ev), "Sure.", true)
				return
			case <-tick.C:
				p.respond(id(first), "0123456789", false)
			}
		}
	})
	ctx := testCtx(t)
	c := dial(t, url, fakeretell.Options{SpeakRate: 200})
	if _, err := c.WaitBegin(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := c.Say(ctx, "Tell me a story.")
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Interrupt(ctx, n, fakeretell.BargeIn{Chars: 25}, "Stop.")
	if err != nil {
		t.Fatal(err)
	}
	if reply, err := c.WaitResponse(ctx, m); err != nil || reply != "Sure." {
		t.Fatalf("reply %q, %v", reply, err)
	}
	want := []fakeretell.Utterance{user("Tell me a story."), agent("0123456789012345678901234"), user("Stop."), agent("Sure.")}
	if got := c.Transcript(); !slices.Equal(got, want) {
		t.Errorf("transcript %v, want %v", got, want)
	}
	if s := c.Stale(n); s < 3 || c.StaleTotal() != s {
		t.Errorf("stale: %d for %d, %d in all", s, n, c.StaleTotal())
	}
	if _, err := c.WaitResponse(ctx, n); !errors.Is(err, fakeretell.ErrSuperseded) {
		t.Errorf("waiting for the interrupted reply: %v", err)
	}
	noViolations(t, c)
}

func TestInterruptAfterTimeDropsEndCall(t *testing.T) {
	long := strings.Repeat("abcdefghij", 10)
	url := serve(t, func(p *peer) {
		p.respond(0, "", true)
		ev := p.next("response_required")
		p.send(map[string]any{"response_type": "response", "response_id": id(ev), "content": long,
			"content_complete": true, "end_call": true})
		p.respond(id(p.next("response_required")), "OK.", true)
		p.send(map[string]any{"response_type": "response", "response_id": id(p.next("response_required")),
			"content": "Bye.", "content_complete": true, "end_call": true})
	})
	ctx := testCtx(t)
	c := dial(t, url, fakeretell.Options{SpeakRate: 100})
	n, err := c.Say(ctx, "Hi.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitResponse(ctx, n); err != nil {
		t.Fatal(err)
	}
	if !c.EndedByAgent() {
		t.Error("end_call on a complete reply: want EndedByAgent until the user cuts it off")
	}
	// 100 ms at 100 characters a second: the user heard 10 characters.
	m, err := c.Interrupt(ctx, n, fakeretell.BargeIn{After: 100 * time.Millisecond}, "Wait.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitResponse(ctx, m); err != nil {
		t.Fatal(err)
	}
	if c.EndedByAgent() {
		t.Error("EndedByAgent after the user cut the goodbye short")
	}
	k, err := c.Say(ctx, "Bye then.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitResponse(ctx, k); err != nil {
		t.Fatal(err)
	}
	want := []fakeretell.Utterance{user("Hi."), agent(long[:10]), user("Wait."), agent("OK."), user("Bye then."), agent("Bye.")}
	if got := c.Transcript(); !slices.Equal(got, want) {
		t.Errorf("transcript %v, want %v", got, want)
	}
	if !c.EndedByAgent() {
		t.Error("the last goodbye was not cut: want EndedByAgent")
	}
	noViolations(t, c)
}

func TestViolations(t *testing.T) {
	url := serve(t, func(p *peer) {
		p.respond(0, "Hi.", true)
		p.respond(0, " Again.", true)                                                                         // content after content_complete
		p.sendRaw(`{"response_type":"bogus"}`)                                                                // unknown response_type
		p.sendRaw(`{"response_type":"response",`)                                                             // not JSON
		p.sendRaw(`{"content":"x"}`)                                                                          // no response_type
		p.sendRaw(`{"response_type":"response","content":"x","content_complete":true}`)                       // no response_id
		p.sendRaw(`{"response_type":"response","response_id":7,"content":"x","content_complete":false}`)      // never asked
		p.sendRaw(`{"response_type":"response","response_id":0,"content":"x","content_complete":"yes"}`)      // wrong type
		_ = p.conn.Write(context.Background(), websocket.MessageBinary, []byte{1, 2, 3})                      // binary
		p.sendRaw(`{"response_type":"tool_call_invocation","tool_call_id":"t1","name":"f","arguments":"{x"}`) // arguments not JSON
		// Valid events of the other kinds: recorded, no violations.
		p.sendRaw(`{"response_type":"update_agent","agent_config":{"responsiveness":0.5}}`)
		p.sendRaw(`{"response_type":"metadata","metadata":{"a":1}}`)
		p.sendRaw(`{"response_type":"agent_interrupt","interrupt_id":1,"content":"Hold on.","content_complete":true,"no_interruption_allowed":true}`)
		p.sendRaw(`{"response_type":"tool_call_invocation","tool_call_id":"t2","name":"f","arguments":"{}"}`)
		p.sendRaw(`{"response_type":"tool_call_result","tool_call_id":"t2","content":"ok","successful":true}`)
		ev := p.next("response_required")
		p.sendRaw(`{"response_type":"response","response_id":1,"content":"ok","content_complete":true,"end_call":null,"transfer_number":null}`)
		_ = ev
	})
	ctx := testCtx(t)
	c := dial(t, url, fakeretell.Options{})
	if _, err := c.WaitBegin(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := c.Say(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	// The server sent its reply last, so every frame before it has been handled.
	if _, err := c.WaitResponse(ctx, n); err != nil {
		t.Fatal(err)
	}
	wants := []string{
		"content after content_complete",
		`unknown response_type "bogus"`,
		"not a JSON object",
		"without response_type",
		"response: missing response_id",
		"response 7: never asked",
		"content_complete is \"yes\"",
		"binary frame",
		"arguments is not stringified JSON",
	}
	v := c.Violations()
	for _, w := range wants {
		if !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, w) }) {
			t.Errorf("no violation %q", w)
		}
	}
	if len(v) != len(wants) {
		t.Errorf("%d violations, want %d:\n%s", len(v), len(wants), strings.Join(v, "\n"))
	}
	for _, typ := range []string{"update_agent", "metadata", "agent_interrupt", "tool_call_result"} {
		if len(c.Received(typ)) != 1 {
			t.Errorf("%s: received %d", typ, len(c.Received(typ)))
		}
	}
	if got := c.Transcript(); !slices.Equal(got, []fakeretell.Utterance{agent("Hi."), user("hello"), agent("ok")}) {
		t.Errorf("transcript %v", got)
	}
}

func TestMissingBeginMessage(t *testing.T) {
	url := serve(t, func(p *peer) { p.config(false, false) })
	c := dial(t, url, fakeretell.Options{})
	deadline := time.Now().Add(3 * time.Second)
	for len(c.Received("config")) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if v := c.Violations(); len(v) != 1 || !strings.Contains(v[0], "begin message") {
		t.Errorf("violations %q", v)
	}
	select {
	case <-c.Done():
	default:
		t.Error("Done not closed after Close")
	}
}

func TestServerHangsUp(t *testing.T) {
	url := serve(t, func(p *peer) {
		p.respond(0, "Goodbye.", true)
		_ = p.conn.Close(websocket.StatusNormalClosure, "")
	})
	ctx := testCtx(t)
	c := dial(t, url, fakeretell.Options{})
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("the fake did not notice the hangup")
	}
	if got := websocket.CloseStatus(c.Err()); got != websocket.StatusNormalClosure {
		t.Errorf("close status %v (%v)", got, c.Err())
	}
	if _, err := c.Say(ctx, "hello?"); err == nil {
		t.Error("Say on an ended call succeeded")
	}
	if text, err := c.WaitBegin(ctx); err != nil || text != "Goodbye." {
		t.Errorf("begin %q, %v", text, err)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	noViolations(t, c)
}
