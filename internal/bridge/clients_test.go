package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/bridge"
	"github.com/handset-voice/handset/internal/sim/bridgeclients"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/testpeer"
)

// Clients no one here wrote, from npm: the official openai SDK and LiveKit Agents' OpenAI
// plugin, pointed at the bridge in front of the Hermes adapter and the fake Hermes.

func clientRequest(r *rig, said string) bridgeclients.Request {
	return bridgeclients.Request{BaseURL: r.url, Token: token, Model: "hermes-agent",
		Messages: []bridgeclients.Message{{Role: "system", Content: "You are the front desk."}, {Role: "user", Content: said}},
		Headers:  map[string]string{bridge.HeaderSession: "room-42"}}
}

func replyTo(said string) string {
	return fakehermes.ReplyText([]fakehermes.Message{{Role: "user", Content: said}})
}

func TestTheOpenAISDK(t *testing.T) {
	testpeer.Slow(t, "runs the openai SDK in Node")
	r := newRig(t, fakehermes.Options{SlowEvery: 20 * time.Millisecond}, hermes.TransportRuns, nil)
	const said = "When do you open SLOW"
	whole := bridgeclients.OpenAIComplete(t, clientRequest(r, said))
	if whole.Error != nil || whole.Text != replyTo(said) || whole.FinishReason != "stop" || whole.Usage == nil {
		t.Errorf("whole: %+v (error %+v)", whole, whole.Error)
	}
	req := clientRequest(r, said)
	req.Extra = map[string]any{"stream_options": map[string]any{"include_usage": true}}
	streamed := bridgeclients.OpenAIStream(t, req)
	if streamed.Error != nil || streamed.Text != replyTo(said) || len(streamed.Deltas) < 2 || streamed.FinishReason != "stop" || streamed.Usage == nil {
		t.Errorf("stream: %+v (error %+v)", streamed, streamed.Error)
	}
	for _, q := range r.hermes.Requests() {
		if q.SessionID != "" && q.SessionID != "handset-bridge-room-42" {
			t.Errorf("session %q", q.SessionID)
		}
	}
	ids, apiErr := bridgeclients.OpenAIModels(t, r.url, token)
	if apiErr != nil || len(ids) != 1 || ids[0] != "hermes" {
		t.Errorf("models %q, error %+v", ids, apiErr)
	}
	bad := clientRequest(r, said)
	bad.Token = "not-the-token-0123456789abcdef0123456789"
	if res := bridgeclients.OpenAIComplete(t, bad); res.Error == nil || res.Error.Status != 401 || res.Error.Code != "invalid_api_key" {
		t.Errorf("a wrong token: %+v", res.Error)
	}
}

// A runtime's failure reaches the SDK as an error it raises, with the status and type, and
// no reply text.
func TestTheOpenAISDKSeesRuntimeFailuresAsErrors(t *testing.T) {
	testpeer.Slow(t, "runs the openai SDK in Node")
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	for _, word := range []string{fakehermes.MagicFail500, fakehermes.MagicWarning} {
		for name, run := range map[string]func(testing.TB, bridgeclients.Request) bridgeclients.Result{
			"whole": bridgeclients.OpenAIComplete, "stream": bridgeclients.OpenAIStream} {
			res := run(t, clientRequest(r, "please "+word))
			if res.Error == nil || res.Error.Status != 502 || res.Error.Type != "server_error" || res.Text != "" {
				t.Errorf("%s %s: %+v (error %+v)", name, word, res, res.Error)
			}
			if strings.Contains(res.Text, "Provider authentication failed") {
				t.Errorf("%s %s: the runtime's error text came through as content", name, word)
			}
		}
	}
}

// Aborting mid-stream (what a voice platform does when the user interrupts) stops the
// Hermes run: the fake sees POST /v1/runs/{id}/stop within a second.
func TestAbortingMidStreamStopsTheRun(t *testing.T) {
	testpeer.Slow(t, "runs the openai SDK and LiveKit Agents in Node")
	for name, run := range map[string]func(testing.TB, bridgeclients.Request) bridgeclients.Result{
		"openai": bridgeclients.OpenAIStream, "livekit": bridgeclients.LiveKitStream} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, fakehermes.Options{SlowEvery: 2 * time.Second}, hermes.TransportRuns, nil)
			req := clientRequest(r, "Tell me everything SLOW")
			req.AbortAfterFirstToken = true
			res := run(t, req)
			aborted := time.Now()
			if !res.Aborted || len(res.Deltas) != 1 {
				t.Fatalf("the client did not abort after its first token: %+v (error %+v)", res, res.Error)
			}
			runs := r.hermes.Runs()
			if len(runs) != 1 {
				t.Fatalf("runs %q", runs)
			}
			for !r.hermes.Stopped(runs[0]) && time.Since(aborted) < 3*time.Second {
				time.Sleep(5 * time.Millisecond)
			}
			if !r.hermes.Stopped(runs[0]) {
				t.Fatalf("the run was not stopped (status %q)", r.hermes.Status(runs[0]))
			}
			if d := time.Since(aborted); d > time.Second {
				t.Errorf("the run stopped %v after the abort, want under a second", d)
			}
		})
	}
}

func TestLiveKitAgentsPlugin(t *testing.T) {
	testpeer.Slow(t, "runs LiveKit Agents in Node")
	r := newRig(t, fakehermes.Options{SlowEvery: 20 * time.Millisecond}, hermes.TransportRuns, nil)
	const said = "Is the pool open SLOW"
	res := bridgeclients.LiveKitStream(t, clientRequest(r, said))
	if res.Error != nil || res.Text != replyTo(said) || len(res.Deltas) < 2 {
		t.Errorf("%+v (error %+v)", res, res.Error)
	}
	failed := bridgeclients.LiveKitStream(t, clientRequest(r, "please "+fakehermes.MagicFail500))
	if failed.Error == nil || failed.Error.Status != 502 || failed.Text != "" {
		t.Errorf("a runtime failure: %+v (error %+v)", failed, failed.Error)
	}
	q := r.hermes.Requests()[0]
	if q.SessionID != "handset-bridge-room-42" || !strings.Contains(q.Body, "You are the front desk.") {
		t.Errorf("session %q, body %s", q.SessionID, q.Body)
	}
}
