package bridge_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/bridge"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/fakeretell"
)

const retellCaller = "+15551234567"

// retellURL is what a Retell agent's custom LLM URL is set to for the rig's bridge.
func (r *rig) retellURL(tok string) string {
	return "ws" + strings.TrimPrefix(r.url, "http") + "/retell/" + tok
}

func dialRetell(t *testing.T, r *rig, callID string, opts fakeretell.Options) *fakeretell.Call {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if opts.PingEvery == 0 {
		opts.PingEvery, opts.PongTimeout = 100*time.Millisecond, time.Second
	}
	c, err := fakeretell.Dial(ctx, r.retellURL(token), callID, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		if v := c.Violations(); len(v) > 0 {
			t.Errorf("the bridge broke Retell's protocol: %q", v)
		}
	})
	return c
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A Retell call: the config, the begin message, the call's caller keyed by their hash, a
// reply streamed in pieces, the reminder, and pongs for Retell's pings.
func TestRetellCallThroughTheBridge(t *testing.T) {
	dataDir := t.TempDir()
	r := newRig(t, fakehermes.Options{SlowEvery: 20 * time.Millisecond}, hermes.TransportRuns, func(o *bridge.Options) {
		o.DataDir = dataDir
		o.Spoken = bridge.Spoken{First: "Grand Hotel, how can I help?", Silence: "Are you still there?"}
	})
	call := dialRetell(t, r, "call_7f3a", fakeretell.Options{From: retellCaller, To: "+15550000000", Direction: "inbound"})
	ctx := waitCtx(t)
	if begin, err := call.WaitBegin(ctx); err != nil || begin != "Grand Hotel, how can I help?" {
		t.Fatalf("begin message %q, %v", begin, err)
	}
	if cfg, ok := call.Config(); !ok || !cfg.AutoReconnect || !cfg.CallDetails {
		t.Errorf("config %+v (sent %v), want auto_reconnect and call_details", cfg, ok)
	}
	id, err := call.Say(ctx, "What time is checkout SLOW")
	if err != nil {
		t.Fatal(err)
	}
	reply, err := call.WaitResponse(ctx, id)
	if err != nil || !strings.Contains(reply, "What time is checkout") {
		t.Fatalf("reply %q, %v", reply, err)
	}
	if n := len(call.Received("response")); n < 4 {
		t.Errorf("%d response events, want the reply in pieces", n)
	}
	id, err = call.Remind(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := call.WaitResponse(ctx, id); err != nil || again != "Are you still there?" {
		t.Errorf("reminder answered %q, %v", again, err)
	}
	time.Sleep(300 * time.Millisecond) // a few of Retell's pings
	if n := call.MissedPongs(); n != 0 {
		t.Errorf("%d pongs missed", n)
	}

	runs := r.hermes.Requests()
	hash := session.CallerHash(secret, retellCaller)
	var sawRun bool
	for _, q := range runs {
		all := q.Body + q.SessionID + q.SessionKey
		for k, v := range q.Header {
			all += k + strings.Join(v, ",")
		}
		if strings.Contains(all, "5551234567") || strings.Contains(all, "5550000000") {
			t.Errorf("%s %s: the runtime saw a raw number: %s", q.Method, q.Path, all)
		}
		if q.Method == http.MethodPost && q.Path == "/v1/runs" {
			sawRun = true
			if q.SessionID != "handset-bridge-call_7f3a" || !strings.Contains(q.SessionKey, hash) {
				t.Errorf("run: session %q key %q, want handset-bridge-call_7f3a keyed by the caller's hash", q.SessionID, q.SessionKey)
			}
		}
	}
	if !sawRun {
		t.Fatal("no run started")
	}
	_ = call.Close() // Retell hangs up
	waitFor(t, func() bool {
		events := journal(t, dataDir, "bridge-call_7f3a")
		return events[len(events)-1].Type == obs.CallEnd
	})
	events := journal(t, dataDir, "bridge-call_7f3a")
	if events[0].Type != obs.CallStart || events[0].CallerHash != hash || !slices.Contains(types(events), obs.AgentDone) {
		t.Errorf("journal %v (start %+v)", types(events), events[0])
	}
	if end := events[len(events)-1]; end.Reason != "caller_hangup" {
		t.Errorf("the call ended %+v, want caller_hangup", end)
	}
}

// The user talks over the agent: Retell asks for a newer response, the runtime's run for
// the older one stops within a second, nothing more is sent for it, and the runtime is
// told what the user heard.
func TestRetellInterruptionStopsTheRunAndIsToldAsHeard(t *testing.T) {
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		t.Run(transport, func(t *testing.T) {
			r := newRig(t, fakehermes.Options{SlowEvery: 150 * time.Millisecond, Said: saidAfterNote}, transport, nil)
			call := dialRetell(t, r, "call_8b1c", fakeretell.Options{From: retellCaller, SpeakRate: 40})
			ctx := waitCtx(t)
			if _, err := call.WaitBegin(ctx); err != nil {
				t.Fatal(err)
			}
			id, err := call.Say(ctx, "Tell me about the spa SLOW")
			if err != nil {
				t.Fatal(err)
			}
			next, err := call.Interrupt(ctx, id, fakeretell.BargeIn{Chars: 12}, "Sorry, how much is it")
			if err != nil {
				t.Fatal(err)
			}
			cut := time.Now()
			if _, err := call.WaitResponse(ctx, next); err != nil {
				t.Fatal(err)
			}
			if n := call.Stale(id); n > 1 {
				t.Errorf("%d frames for the interrupted response after the barge-in, want at most the one in flight", n)
			}
			tr := call.Transcript()
			heard := ""
			for _, u := range tr {
				if u.Role == "agent" && u.Content != "" {
					heard = strings.TrimSpace(u.Content)
					break
				}
			}
			switch transport {
			case hermes.TransportRuns:
				runs := r.hermes.Runs()
				for !r.hermes.Stopped(runs[0]) && time.Since(cut) < 2*time.Second {
					time.Sleep(5 * time.Millisecond)
				}
				if !r.hermes.Stopped(runs[0]) || time.Since(cut) > time.Second {
					t.Errorf("the interrupted run stopped: %v, %v after the barge-in; want within a second", r.hermes.Stopped(runs[0]), time.Since(cut))
				}
			case hermes.TransportChat:
				want := "heard only \u201c" + heard + "\u201d, then interrupted"
				if got := lastSaid(t, r.hermes); heard == "" || !strings.Contains(got, want) {
					t.Errorf("the runtime was sent %q, want it told %q", got, want)
				}
			}
		})
	}
}

// A runtime that fails is never heard: the caller hears Handset's own words.
func TestRetellRuntimeFailureSpeaksHandsetsWords(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, func(o *bridge.Options) { o.Spoken.Error = "Sorry, one problem here." })
	call := dialRetell(t, r, "call_9d2e", fakeretell.Options{})
	ctx := waitCtx(t)
	if begin, err := call.WaitBegin(ctx); err != nil || begin != "" {
		t.Fatalf("begin %q, %v: want the user to speak first", begin, err)
	}
	for _, magic := range []string{"FAIL500", "FAILRUN"} {
		id, err := call.Say(ctx, "Book the spa "+magic)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := call.WaitResponse(ctx, id); err != nil || got != "Sorry, one problem here." {
			t.Errorf("%s: the caller heard %q, %v", magic, got, err)
		}
	}
}

// Without the bridge's token in its URL the socket is refused, and nothing reaches the runtime.
func TestRetellWithoutTheTokenIsRefused(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	for _, tok := range []string{"wrong-token-0123456789abcdef0123456789", token[:len(token)-1], "%20"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := fakeretell.Dial(ctx, r.retellURL(tok), "call_1", fakeretell.Options{})
		cancel()
		if err == nil {
			_ = c.Close()
			t.Errorf("token %q: the socket opened", tok)
		}
	}
	if n := len(r.hermes.Requests()); n != 0 {
		t.Errorf("the runtime got %d requests", n)
	}
}
