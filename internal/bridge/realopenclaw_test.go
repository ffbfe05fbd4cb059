package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/bridge"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/bridgeclients"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/fakeretell"
	"github.com/handset-voice/handset/internal/sim/realopenclaw"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
)

// The bridge in front of Handset's OpenClaw adapter, in front of the real OpenClaw gateway
// (scripts/openclaw.sh) whose model is the fake LLM, driven by the openai SDK from npm
// (scripts/bridge-clients.sh). Each test starts one gateway (20-30 s here, and its first
// run takes another 10-15 s) and runs both of the adapter's transports against it.

const ocAgent = "support"

var ocTransports = []string{"ws", "http"}

// ocRig is one real gateway, the fake LLM behind it, and what the test watches of both.
type ocRig struct {
	gw    *realopenclaw.Gateway
	llm   *fakeopenai.Server
	ended *ocEnds
	chats *ocChatWatch
}

func startOpenClaw(t *testing.T) *ocRig {
	t.Helper()
	realopenclaw.NeedInstall(t)
	o := &ocRig{llm: fakeopenai.New(fakeopenai.Options{Key: "llm-key", SlowEvery: 50 * time.Millisecond}), ended: &ocEnds{}}
	// HumanLast: the fake reads its magic words in the caller's text, not in the context
	// message the gateway puts after it.
	llmSrv := httptest.NewServer(o.ended.wrap(realopenclaw.HumanLast(o.llm)))
	t.Cleanup(func() { o.llm.Close(); llmSrv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	begin := time.Now()
	gw, err := realopenclaw.Start(ctx, realopenclaw.Options{LLMURL: llmSrv.URL + "/v1", LLMKey: "llm-key",
		Agents: []string{ocAgent}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gateway ready in %s", time.Since(begin).Round(time.Millisecond))
	o.gw = gw
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the gateway's output ends:\n%s", ocTail(gw.Log(), 60))
		}
		gw.Stop()
	})
	o.chats = watchChats(t, gw)
	return o
}

// bridge is the bridge in front of the OpenClaw adapter over transport, built from settings
// as `handset serve` builds it (no session key setting: one gateway session per
// conversation). It returns the bridge's base URL and when the bridge last saw a request's
// context end (for an aborted stream: the client going away).
func (o *ocRig) bridge(t *testing.T, transport string, mod func(*bridge.Options)) (string, *ocGone) {
	t.Helper()
	agent, err := openclaw.Provider.New(registry.Build{Settings: registrytest.Settings{
		"HANDSET_AGENT_URL":       strings.TrimSuffix(o.gw.HTTPURL(), "/v1"),
		"HANDSET_AGENT_KEY":       o.gw.Token(),
		"HANDSET_AGENT_MODEL":     "openclaw/" + ocAgent,
		"HANDSET_AGENT_TRANSPORT": transport,
		"HANDSET_AGENT_TIMEOUT":   "30s",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := agent.(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	opts := bridge.Options{Agent: agent, Token: token,
		CallerHash: func(n string) string { return session.CallerHash(secret, n) }}
	if mod != nil {
		mod(&opts)
	}
	b, err := bridge.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	b.Register(mux)
	gone := &ocGone{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		context.AfterFunc(r.Context(), gone.note)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", gone
}

func ocRequest(url, room, said string) bridgeclients.Request {
	return bridgeclients.Request{BaseURL: url, Token: token, Model: "openclaw/" + ocAgent,
		Messages: []bridgeclients.Message{{Role: "system", Content: "You are the front desk."}, {Role: "user", Content: said}},
		Headers:  map[string]string{bridge.HeaderSession: room}}
}

// ocKey is the gateway session the adapter files the bridge's conversation room under.
func ocKey(room string) string {
	return openclaw.SessionKey(ocAgent, session.None, session.Context{CallID: voice.CallID("bridge-" + room)})
}

// TestRealOpenClawThroughTheBridge: the openai SDK's whole and streamed requests get what
// the fake LLM answered through the real gateway, and X-Handset-Session: room-7 files the
// turns in the gateway session keyed by bridge-room-7.
func TestRealOpenClawThroughTheBridge(t *testing.T) {
	testpeer.Slow(t, "starts the real OpenClaw gateway and runs the openai SDK in Node")
	o := startOpenClaw(t)
	key := ocKey("room-7")
	if key != "agent:support:handset:call:bridge-room-7" {
		t.Fatalf("session key %q", key)
	}
	for _, transport := range ocTransports {
		t.Run(transport, func(t *testing.T) {
			url, _ := o.bridge(t, transport, nil)
			for _, stream := range []bool{false, true} {
				begin := time.Now()
				said := "When does the " + transport + " pool open"
				run := bridgeclients.OpenAIComplete
				if stream {
					said += " SLOW" // in pieces, 50 ms apart
					run = bridgeclients.OpenAIStream
				}
				res := run(t, ocRequest(url, "room-7", said))
				q, ok := o.llmRequest(said)
				if !ok {
					t.Fatalf("stream %v: the fake LLM never saw %q: %+v (error %v)", stream, said, res, res.Error)
				}
				// The fake echoes what the gateway gave it (with the gateway's time stamp).
				want := o.llm.ReplyText(q.Messages)
				if res.Error != nil || res.Text != want || res.FinishReason != "stop" {
					t.Errorf("stream %v: %+v (error %v), want %q", stream, res, res.Error, want)
				}
				if stream && len(res.Deltas) < 2 {
					t.Errorf("stream: deltas %q, want the reply in pieces", res.Deltas)
				}
				if !ocHolds(q.Messages, "system", "You are the front desk.") {
					t.Errorf("stream %v: the instructions did not reach the model: %+v", stream, q.Messages)
				}
				// The gateway's own transcript of the session holds the turn.
				history := o.history(t, key)
				if !ocHolds(history, "user", said) || !ocHolds(history, "assistant", want) {
					t.Errorf("stream %v: the session %s holds %+v, want the turn", stream, key, history)
				}
				t.Logf("%s stream=%v: %s", transport, stream, time.Since(begin).Round(time.Millisecond))
			}
			// The listener cuts the last reply off: the client's next request has it as far
			// as it was spoken, and the gateway's own transcript learns what was heard.
			last := "When does the " + transport + " pool open SLOW"
			reply := o.history(t, key)
			heard := ""
			for _, m := range reply {
				if m.Role == "assistant" {
					heard = strings.Join(strings.Fields(m.Content)[:min(3, len(strings.Fields(m.Content)))], " ")
				}
			}
			cut := ocRequest(url, "room-7", "Stop, how much is it")
			cut.Messages = []bridgeclients.Message{{Role: "system", Content: "You are the front desk."},
				{Role: "user", Content: last}, {Role: "assistant", Content: heard}, {Role: "user", Content: "Stop, how much is it"}}
			if res := bridgeclients.OpenAIComplete(t, cut); res.Error != nil {
				t.Fatalf("the turn after the cut: %v", res.Error)
			}
			told := "of your reply the caller heard only \u201c" + heard + "\u201d, then interrupted"
			if history := o.history(t, key); heard == "" || !ocHolds(history, "user", told) {
				t.Errorf("the session %s holds %+v, want its user message to tell it %q", key, history, told)
			}
			// And every run the gateway reported was in that session.
			if keys := o.chats.sessions(); len(keys) != 1 || keys[0] != key {
				t.Errorf("the gateway's runs were in sessions %q, want only %s", keys, key)
			}
		})
	}
	// A Retell call whose caller talks over the agent: the gateway's session of the call
	// learns what the caller heard of the reply they cut off.
	t.Run("retell", func(t *testing.T) {
		url, _ := o.bridge(t, "ws", nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		call, err := fakeretell.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/retell/"+token, "call_oc1",
			fakeretell.Options{SpeakRate: 40})
		if err != nil {
			t.Fatal(err)
		}
		defer call.Close()
		if _, err := call.WaitBegin(ctx); err != nil {
			t.Fatal(err)
		}
		id, err := call.Say(ctx, "What is the wifi password SLOW")
		if err != nil {
			t.Fatal(err)
		}
		next, err := call.Interrupt(ctx, id, fakeretell.BargeIn{Chars: 12}, "Sorry, which network")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := call.WaitResponse(ctx, next); err != nil {
			t.Fatal(err)
		}
		heard := ""
		for _, u := range call.Transcript() {
			if u.Role == "agent" && strings.TrimSpace(u.Content) != "" {
				heard = strings.TrimSpace(u.Content) // the reply cut off: the call's first words
				break
			}
		}
		retellKey := ocKey("call_oc1")
		told := "heard only \u201c" + heard + "\u201d, then interrupted"
		if history := o.history(t, retellKey); heard == "" || !ocHolds(history, "user", told) {
			t.Errorf("the session %s holds %+v, want a user message telling it %q", retellKey, history, told)
		}
		if v := call.Violations(); len(v) > 0 {
			t.Errorf("the bridge broke Retell's protocol: %q", v)
		}
	})
}

// TestRealOpenClawStopsWhenTheClientAborts: a client (the openai SDK, or LiveKit Agents'
// OpenAI plugin) that aborts a streamed reply after its first token stops the gateway's run
// in the conversation's session. The model sends its first sentence and then holds
// its request open until the gateway lets go of it (STALL), so that request ending at all
// means the gateway aborted its model call; it must end within 2 s of the client going.
func TestRealOpenClawStopsWhenTheClientAborts(t *testing.T) {
	testpeer.Slow(t, "starts the real OpenClaw gateway and runs the openai SDK and LiveKit Agents in Node")
	o := startOpenClaw(t)
	clients := []struct {
		name   string
		stream func(testing.TB, bridgeclients.Request) bridgeclients.Result
	}{{"openai", bridgeclients.OpenAIStream}, {"livekit", bridgeclients.LiveKitStream}}
	for _, transport := range ocTransports {
		for _, client := range clients {
			t.Run(transport+"/"+client.name, func(t *testing.T) {
				stopsWhenTheClientAborts(t, o, transport, client.name, client.stream)
			})
		}
	}
}

// stopsWhenTheClientAborts is one client's abort over one transport.
func stopsWhenTheClientAborts(t *testing.T, o *ocRig, transport, client string, stream func(testing.TB, bridgeclients.Request) bridgeclients.Result) {
	begin := time.Now()
	url, gone := o.bridge(t, transport, nil)
	room := "room-8-" + transport + "-" + client
	said := "Tell me everything over " + transport + " to " + client + " STALL"
	req := ocRequest(url, room, said)
	req.AbortAfterFirstToken = true
	res := stream(t, req)
	if !res.Aborted || len(res.Deltas) != 1 {
		t.Fatalf("the client did not abort after its first token: %+v (error %v)", res, res.Error)
	}
	left := gone.last()
	if left.IsZero() {
		t.Fatal("the bridge never saw the client go")
	}
	var stopped time.Time
	for stopped = o.ended.of(said); stopped.IsZero() && time.Since(left) < 5*time.Second; stopped = o.ended.of(said) {
		time.Sleep(5 * time.Millisecond)
	}
	if stopped.IsZero() {
		t.Fatalf("the gateway still holds its model request %s after the client went", time.Since(left).Round(time.Millisecond))
	}
	d := stopped.Sub(left)
	switch q, _ := o.llmRequest(said); {
	case !q.Aborted:
		t.Errorf("the model request ended without the gateway dropping it: %+v", q)
	case d < 0:
		t.Errorf("the model request ended %s before the client went: not by the abort", -d)
	case d > 2*time.Second:
		t.Errorf("the gateway dropped its model request %s after the client went, want within 2 s", d)
	}
	// The gateway says so too: the run ended aborted, not final.
	state, at := o.chats.end(ocKey(room), 5*time.Second)
	if state != "aborted" {
		t.Errorf("the gateway's run in %s ended %q, want aborted", ocKey(room), state)
	}
	t.Logf("%s, %s: the model request dropped %s and the run aborted %s after the client went; %s in all",
		transport, client, d.Round(time.Millisecond), at.Sub(left).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
}

// TestRealOpenClawFailureIsAnError: the model refusing the gateway's request fails the run,
// which reaches the openai SDK as an error it raises, with no reply text.
//
// FAIL400, since the gateway retries a model's 500 for over a minute and, after a 401, turns
// the key off for a minute. Over the WebSocket the gateway's error event names no status,
// so the bridge answers 502 server_error. Over the HTTP endpoint the gateway passes the
// model's own error on in the stream ("400 … [invalid_request_error]"), which Handset's
// OpenAI adapter reads as the runtime refusing its input: still the runtime's failure, not
// the client's, so 502 runtime_refused.
func TestRealOpenClawFailureIsAnError(t *testing.T) {
	testpeer.Slow(t, "starts the real OpenClaw gateway and runs the openai SDK in Node")
	o := startOpenClaw(t)
	want := map[string]bridgeclients.Error{
		"ws":   {Status: 502, Type: "server_error", Code: "runtime_error"},
		"http": {Status: 502, Type: "server_error", Code: "runtime_refused"},
	}
	for _, transport := range ocTransports {
		t.Run(transport, func(t *testing.T) {
			// The gateway takes seconds to reach its model, as long as the default 5 s after
			// which a stream's 200 is sent and a failure can only be an event in it.
			url, _ := o.bridge(t, transport, func(opts *bridge.Options) { opts.CommitAfter = 20 * time.Second })
			for _, stream := range []bool{false, true} {
				begin := time.Now()
				said := "Book a table over " + transport + " " + fakeopenai.MagicFail400
				run := bridgeclients.OpenAIComplete
				if stream {
					said += " streamed"
					run = bridgeclients.OpenAIStream
				}
				res := run(t, ocRequest(url, "room-9-"+transport, said))
				w := want[transport]
				if e := res.Error; e == nil || e.Status != w.Status || e.Type != w.Type || e.Code != w.Code || res.Text != "" || len(res.Deltas) != 0 {
					t.Errorf("stream %v: %+v (error %v), want %d %s %s and no text", stream, res, res.Error, w.Status, w.Type, w.Code)
				}
				if q, _ := o.llmRequest(said); q.Status != 400 {
					t.Errorf("stream %v: the fake LLM answered %d, want its 400", stream, q.Status)
				}
				t.Logf("%s stream=%v: %v in %s", transport, stream, res.Error, time.Since(begin).Round(time.Millisecond))
			}
		})
	}
}

// llmRequest is the fake LLM's record of the last request that carried said.
func (o *ocRig) llmRequest(said string) (fakeopenai.Request, bool) {
	reqs := o.llm.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if ocHolds(reqs[i].Messages, "user", said) {
			return reqs[i], true
		}
	}
	return fakeopenai.Request{}, false
}

// ocHolds reports whether a message of role holds text.
func ocHolds(msgs []fakeopenai.Message, role, text string) bool {
	for _, m := range msgs {
		if m.Role == role && strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}

// ocEnds records when each request to the fake LLM ended, by its body: for a request the
// fake holds (STALL), that is when the gateway let go of it.
type ocEnds struct {
	mu   sync.Mutex
	reqs []ocEnded
}

type ocEnded struct {
	body string
	at   time.Time
}

func (e *ocEnds) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
		e.mu.Lock()
		e.reqs = append(e.reqs, ocEnded{string(body), time.Now()})
		e.mu.Unlock()
	})
}

// of is when the request carrying text ended; zero while none has.
func (e *ocEnds) of(text string) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.reqs {
		if strings.Contains(r.body, text) {
			return r.at
		}
	}
	return time.Time{}
}

// ocGone is when the last request's context at the bridge ended.
type ocGone struct {
	mu sync.Mutex
	at time.Time
}

func (g *ocGone) note() {
	g.mu.Lock()
	g.at = time.Now()
	g.mu.Unlock()
}

func (g *ocGone) last() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.at
}

// history reads a session's transcript back from the gateway (chat.history).
func (o *ocRig) history(t *testing.T, key string) []fakeopenai.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := ocDial(ctx, t, o.gw)
	defer c.Close()
	msgs, err := c.History(ctx, key, 100)
	if err != nil {
		t.Fatalf("chat.history: %v", err)
	}
	var out []fakeopenai.Message
	for _, m := range msgs {
		out = append(out, fakeopenai.Message{Role: m.Role, Content: m.Text})
	}
	return out
}

func ocDial(ctx context.Context, t *testing.T, gw *realopenclaw.Gateway) *realopenclaw.WSConn {
	t.Helper()
	c, err := realopenclaw.DialWS(ctx, gw.WSURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Handshake(ctx, gw.Token()); err != nil {
		c.Close()
		t.Fatal(err)
	}
	return c
}

// ocChatWatch keeps the "chat" events the gateway sends every operator connection, for
// runs over either transport: which sessions runs were in, and how they ended.
type ocChatWatch struct {
	mu      sync.Mutex
	events  []ocChat
	changed chan struct{} // closed and replaced on each event
}

type ocChat struct {
	SessionKey string `json:"sessionKey"`
	State      string `json:"state"`
	at         time.Time
}

func watchChats(t *testing.T, gw *realopenclaw.Gateway) *ocChatWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hctx, hcancel := context.WithTimeout(ctx, 20*time.Second)
	defer hcancel()
	c := ocDial(hctx, t, gw)
	w := &ocChatWatch{changed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			f, err := c.ReadFrame(ctx)
			if err != nil {
				return
			}
			var e ocChat
			if f.Type != "event" || f.Event != "chat" || json.Unmarshal(f.Payload, &e) != nil {
				continue
			}
			e.at = time.Now()
			w.mu.Lock()
			w.events = append(w.events, e)
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); c.Close(); <-done })
	return w
}

// sessions lists the session keys runs were in, in order of first sight.
func (w *ocChatWatch) sessions() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keys []string
	seen := map[string]bool{}
	for _, e := range w.events {
		if !seen[e.SessionKey] {
			seen[e.SessionKey] = true
			keys = append(keys, e.SessionKey)
		}
	}
	return keys
}

// end waits up to limit for a run in session key to end, and returns how (final, aborted
// or error) and when the event came; "" if none did.
func (w *ocChatWatch) end(key string, limit time.Duration) (string, time.Time) {
	timeout := time.After(limit)
	for {
		w.mu.Lock()
		ch := w.changed
		for _, e := range w.events {
			if e.SessionKey == key && (e.State == "final" || e.State == "aborted" || e.State == "error") {
				w.mu.Unlock()
				return e.State, e.at
			}
		}
		w.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			return "", time.Time{}
		}
	}
}

func ocTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestRealOpenClawTakesTheTurnAfterABargeIn: a voice platform whose user talks over the
// reply drops its stream and at once asks again in the same session, with the reply as far
// as it was heard. The gateway is still ending the first run when the second turn comes:
// that turn must reach the model, be answered, and stay in the session's transcript.
func TestRealOpenClawTakesTheTurnAfterABargeIn(t *testing.T) {
	testpeer.Slow(t, "starts the real OpenClaw gateway")
	o := startOpenClaw(t)
	for _, transport := range ocTransports {
		t.Run(transport, func(t *testing.T) {
			url, _ := o.bridge(t, transport, nil)
			room := "room-10-" + transport
			// SLOW: the reply comes in pieces 50 ms apart, so the platform drops it mid-run. (Not
			// STALL: the stopped turn's words go to the runtime again with the next, and the
			// fake model would hold that one too.)
			first := "Tell me every opening hour over " + transport + " SLOW"
			system := map[string]string{"role": "system", "content": "You are the front desk."}
			ctx, cancel := context.WithCancel(context.Background())
			resp := ocPost(t, ctx, url, room, true, system, map[string]string{"role": "user", "content": first})
			heard := ""
			sc := bufio.NewScanner(resp.Body)
			for heard == "" && sc.Scan() {
				var chunk struct {
					Choices []struct {
						Delta struct{ Content string } `json:"delta"`
					} `json:"choices"`
				}
				if data, ok := strings.CutPrefix(sc.Text(), "data: {"); ok && json.Unmarshal([]byte("{"+data), &chunk) == nil && len(chunk.Choices) > 0 {
					heard = chunk.Choices[0].Delta.Content
				}
			}
			cancel() // the user talks over it: the platform drops the stream ...
			resp.Body.Close()
			if heard == "" {
				t.Fatal("no first text before the barge-in")
			}
			next := "Sorry, only Sunday over " + transport
			begin := time.Now()
			// ... and at once asks again, the reply as far as it was heard.
			resp = ocPost(t, context.Background(), url, room, false, system, map[string]string{"role": "user", "content": first},
				map[string]string{"role": "assistant", "content": heard}, map[string]string{"role": "user", "content": next})
			defer resp.Body.Close()
			var answer struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK || len(answer.Choices) == 0 {
				t.Fatalf("the turn after the barge-in: HTTP %d, %+v (%v)", resp.StatusCode, answer, err)
			}
			q, ok := o.llmRequest(next)
			if !ok {
				t.Fatalf("the model never saw the turn after the barge-in; the bridge answered %q", answer.Choices[0].Message.Content)
			}
			if want := o.llm.ReplyText(q.Messages); answer.Choices[0].Message.Content != want {
				t.Errorf("answered %q, want the model's %q", answer.Choices[0].Message.Content, want)
			}
			if history := o.history(t, ocKey(room)); !ocHolds(history, "user", next) {
				t.Errorf("the session holds %+v, want the turn after the barge-in", history)
			}
			t.Logf("%s: answered %s after the barge-in", transport, time.Since(begin).Round(time.Millisecond))

			// The user speaks again before the gateway even asked its model: the stopped
			// turn's words must still reach it, once, with the new ones.
			early := "Is the sauna open over " + transport
			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			if resp, err := ocDo(ctx, url, room, true, system, map[string]string{"role": "user", "content": early}); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			then := "And the pool over " + transport
			resp = ocPost(t, context.Background(), url, room, false, system, map[string]string{"role": "user", "content": early},
				map[string]string{"role": "user", "content": then})
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("the turn after an early barge-in: HTTP %d", resp.StatusCode)
			}
			q, ok = o.llmRequest(then)
			if !ok {
				t.Fatal("the model never saw the turn after an early barge-in")
			}
			n, said := 0, []string{}
			for _, m := range q.Messages {
				if m.Role == "user" {
					n += strings.Count(m.Content, early)
					said = append(said, m.Content)
				}
			}
			// Never lost. Told twice at times, on either transport: when the turn comes while
			// the gateway is still ending the stopped run, the gateway keeps its words as
			// queued context, and Handset's note tells them too (docs/runtimes.md).
			if n == 0 {
				t.Errorf("the stopped turn's words were lost: %q", said)
			}
			t.Logf("%s: the stopped turn's words reached the model %d times", transport, n)
		})
	}
}

// ocPost sends a chat completions request for room to the bridge at url.
func ocPost(t *testing.T, ctx context.Context, url, room string, stream bool, msgs ...map[string]string) *http.Response {
	t.Helper()
	resp, err := ocDo(ctx, url, room, stream, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func ocDo(ctx context.Context, url, room string, stream bool, msgs ...map[string]string) (*http.Response, error) {
	body, _ := json.Marshal(map[string]any{"model": "openclaw/" + ocAgent, "stream": stream, "messages": msgs})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(bridge.HeaderSession, room)
	return http.DefaultClient.Do(req)
}
