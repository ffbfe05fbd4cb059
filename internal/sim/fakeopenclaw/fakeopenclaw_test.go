package fakeopenclaw_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "tok"

type client struct {
	t  *testing.T
	ws *websocket.Conn
}

func start(t *testing.T, opts fakeopenclaw.Options) (*fakeopenclaw.Server, string) {
	t.Helper()
	opts.Token = token
	f := fakeopenclaw.New(opts)
	srv := httptest.NewServer(f)
	t.Cleanup(func() { f.Close(); srv.Close() })
	return f, "ws" + strings.TrimPrefix(srv.URL, "http")
}

func dial(t *testing.T, url string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return &client{t: t, ws: ws}
}

func (c *client) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if err := c.ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

type frame struct {
	Type, ID, Event string
	OK              bool
	Payload         map[string]any
	Error           map[string]any
}

func (c *client) read() (frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		return frame{}, err
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		c.t.Fatalf("bad frame %s", b)
	}
	return f, nil
}

func (c *client) must() frame {
	c.t.Helper()
	f, err := c.read()
	if err != nil {
		c.t.Fatal(err)
	}
	return f
}

// res reads until the response to id.
func (c *client) res(id string) frame {
	c.t.Helper()
	for {
		if f := c.must(); f.Type == "res" && f.ID == id {
			return f
		}
	}
}

func connectReq(tok string) map[string]any {
	return map[string]any{"type": "req", "id": "r1", "method": "connect", "params": map[string]any{
		"minProtocol": 4, "maxProtocol": 4,
		"client": map[string]any{"id": "gateway-client", "version": "1", "platform": "linux", "mode": "backend"},
		"role":   "operator", "scopes": []string{"operator.read", "operator.write"}, "auth": map[string]any{"token": tok}}}
}

// connected completes the handshake and checks hello-ok carries what the schema requires.
func connected(t *testing.T, url string) *client {
	t.Helper()
	c := dial(t, url)
	if f := c.must(); f.Event != "connect.challenge" || f.Payload["nonce"] == nil {
		t.Fatalf("first frame %+v, want connect.challenge", f)
	}
	c.send(connectReq(token))
	f := c.must()
	if !f.OK || f.Payload["type"] != "hello-ok" {
		t.Fatalf("connect answer %+v", f)
	}
	for _, k := range []string{"server", "features", "snapshot", "auth", "policy"} {
		if f.Payload[k] == nil {
			t.Errorf("hello-ok without %s", k)
		}
	}
	return c
}

// chat reads until the terminal chat event of runID, returning every chat payload of it
// and the count of other runs' events seen.
func (c *client) chat(runID string) (evs []map[string]any, foreign int) {
	c.t.Helper()
	for {
		f := c.must()
		if f.Event != "chat" {
			continue
		}
		if f.Payload["runId"] != runID {
			foreign++
			continue
		}
		evs = append(evs, f.Payload)
		switch f.Payload["state"] {
		case "final", "error", "aborted":
			return evs, foreign
		}
	}
}

func TestBadTokenRefused(t *testing.T) {
	_, url := start(t, fakeopenclaw.Options{})
	c := dial(t, url)
	c.must()
	c.send(connectReq("wrong"))
	f := c.must()
	if f.OK || f.Error["code"] != "INVALID_REQUEST" || f.Error["details"].(map[string]any)["code"] != "AUTH_TOKEN_MISMATCH" {
		t.Fatalf("answer %+v", f)
	}
	if _, err := c.read(); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("close %v, want 1008", err)
	}
}

func TestFirstRequestMustBeConnect(t *testing.T) {
	_, url := start(t, fakeopenclaw.Options{})
	c := dial(t, url)
	c.must()
	c.send(map[string]any{"type": "req", "id": "x", "method": "agents.list", "params": map[string]any{}})
	if f := c.must(); f.OK || !strings.Contains(f.Error["message"].(string), "first request must be connect") {
		t.Fatalf("answer %+v", f)
	}
}

func TestTurnBroadcastAndFinalRepeats(t *testing.T) {
	f, url := start(t, fakeopenclaw.Options{})
	a, b := connected(t, url), connected(t, url)
	a.send(map[string]any{"type": "req", "id": "s1", "method": "chat.send",
		"params": map[string]any{"sessionKey": "handset:call:1", "message": "hi", "idempotencyKey": "k1"}})
	if ack := a.res("s1"); !ack.OK || ack.Payload["runId"] != "k1" || ack.Payload["status"] != "started" {
		t.Fatalf("ack %+v", ack)
	}
	for _, c := range []*client{a, b} { // both clients see the run
		evs, _ := c.chat("k1")
		text := ""
		for _, ev := range evs {
			if ev["state"] == "delta" {
				text += ev["deltaText"].(string)
			}
		}
		last := evs[len(evs)-1]
		if last["state"] != "final" || text != fakeopenclaw.ReplyText("hi") || last["sessionKey"] != "agent:main:handset:call:1" {
			t.Fatalf("events %v", evs)
		}
		if last["seq"] != evs[len(evs)-2]["seq"] {
			t.Errorf("final seq %v, want the last delta's %v", last["seq"], evs[len(evs)-2]["seq"])
		}
	}
	if s := f.Sends(); len(s) != 1 || s[0].IdempotencyKey != "k1" || s[0].Message != "hi" {
		t.Fatalf("sends %+v", s)
	}
}

func TestAbortAndInFlight(t *testing.T) {
	f, url := start(t, fakeopenclaw.Options{})
	c := connected(t, url)
	send := map[string]any{"type": "req", "id": "s1", "method": "chat.send",
		"params": map[string]any{"sessionKey": "k", "message": "TOOLCALL", "idempotencyKey": "run1"}}
	c.send(send)
	c.res("s1")
	send["id"] = "s2"
	c.send(send)
	if ack := c.res("s2"); ack.Payload["status"] != "in_flight" {
		t.Fatalf("duplicate key ack %+v", ack)
	}
	c.send(map[string]any{"type": "req", "id": "a1", "method": "chat.abort", "params": map[string]any{"sessionKey": "k", "runId": "run1"}})
	evs, _ := c.chat("run1")
	if evs[len(evs)-1]["state"] != "aborted" {
		t.Fatalf("events %v", evs)
	}
	if a := f.Aborts(); len(a) != 1 || a[0].RunID != "run1" {
		t.Fatalf("aborts %+v", a)
	}
}

func TestDoubleErrorAndMultiAgent(t *testing.T) {
	_, url := start(t, fakeopenclaw.Options{Agents: []fakeopenclaw.Agent{{ID: "main"}, {ID: "support"}}})
	c := connected(t, url)
	c.send(map[string]any{"type": "req", "id": "s0", "method": "chat.send",
		"params": map[string]any{"sessionKey": "plain", "message": "hi", "idempotencyKey": "x"}})
	if ack := c.must(); ack.OK || !strings.Contains(ack.Error["message"].(string), "Multiple agents") {
		t.Fatalf("unqualified key with two agents: %+v", ack)
	}
	c.send(map[string]any{"type": "req", "id": "s1", "method": "chat.send",
		"params": map[string]any{"sessionKey": "k", "agentId": "support", "message": "DOUBLEERROR", "idempotencyKey": "r"}})
	c.must()
	evs, _ := c.chat("r")
	if evs[len(evs)-1]["state"] != "error" {
		t.Fatalf("events %v", evs)
	}
	second, _ := c.chat("r")
	if second[len(second)-1]["state"] != "error" {
		t.Fatalf("no second error: %v", second)
	}
	c.send(map[string]any{"type": "req", "id": "l", "method": "agents.list", "params": map[string]any{}})
	if l := c.res("l"); len(l.Payload["agents"].([]any)) != 2 {
		t.Fatalf("agents.list %+v", l)
	}
	c.send(map[string]any{"type": "req", "id": "u", "method": "no.such", "params": map[string]any{}})
	if u := c.res("u"); u.OK || u.Error["code"] != "FORBIDDEN" {
		t.Fatalf("unknown method %+v", u)
	}
}

// TestToolLoopNeverRepliesUntilAborted: a TOOLLOOP run starts one tool after another, each
// an agent item event, with no chat text, until chat.abort ends it.
func TestToolLoopNeverRepliesUntilAborted(t *testing.T) {
	_, url := start(t, fakeopenclaw.Options{ToolEvery: 5 * time.Millisecond})
	c := connected(t, url)
	c.send(map[string]any{"type": "req", "id": "s1", "method": "chat.send",
		"params": map[string]any{"sessionKey": "k", "message": "TOOLLOOP", "idempotencyKey": "run1"}})
	c.res("s1")
	tools := map[any]bool{}
	for len(tools) < 3 {
		f := c.must()
		if f.Event == "chat" && f.Payload["state"] != "status" {
			t.Fatalf("a TOOLLOOP run sent chat %v", f.Payload)
		}
		if data, ok := f.Payload["data"].(map[string]any); ok && f.Event == "agent" && data["phase"] == "start" {
			tools[data["itemId"]] = true
		}
	}
	c.send(map[string]any{"type": "req", "id": "a1", "method": "chat.abort", "params": map[string]any{"sessionKey": "k", "runId": "run1"}})
	if evs, _ := c.chat("run1"); evs[len(evs)-1]["state"] != "aborted" {
		t.Fatalf("events %v, want the run aborted", evs)
	}
}

// TestMissingTokenAndStarting: the two refusals added for the rough edges, in the real
// gateway's shapes: no token at all (device pairing required), and a gateway still starting.
func TestMissingTokenAndStarting(t *testing.T) {
	_, url := start(t, fakeopenclaw.Options{})
	c := dial(t, url)
	c.must()
	c.send(connectReq(""))
	if f := c.must(); f.OK || f.Error["code"] != "NOT_PAIRED" || f.Error["details"].(map[string]any)["code"] != "DEVICE_IDENTITY_REQUIRED" {
		t.Fatalf("answer to no token %+v", f)
	}

	var starting atomic.Bool
	starting.Store(true)
	s, url := start(t, fakeopenclaw.Options{Starting: starting.Load})
	c = dial(t, url)
	c.must()
	c.send(connectReq(token))
	f := c.must()
	if f.OK || f.Error["code"] != "UNAVAILABLE" || f.Error["retryable"] != true || f.Error["retryAfterMs"] != float64(500) ||
		f.Error["details"].(map[string]any)["reason"] != "startup-sidecars" {
		t.Fatalf("answer while starting %+v", f)
	}
	if _, err := c.read(); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("close %v, want 1013", err)
	}
	starting.Store(false)
	connected(t, url)
	if s.StartingRefusals() != 1 || s.Connections() != 1 {
		t.Errorf("refusals %d, connections %d", s.StartingRefusals(), s.Connections())
	}
}
