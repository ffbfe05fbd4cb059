package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/handset-voice/handset/internal/testpeer"
)

// cliToolsToken is the agent tools' token of these tests: long enough, not the API token.
const cliToolsToken = "tools-0123456789abcdef0123456789abcdef"

// serve wires HANDSET_TOOLS_TOKEN and HANDSET_CALL_ALLOW into the API: the tools token
// reads a call by its id without its numbers, places calls only to the allow-list, and
// is refused the list of calls; the API token is not limited.
func TestToolsTokenIsLimited(t *testing.T) {
	o := startOutbound(t, nil, []string{"hello"}, "HANDSET_TOOLS_TOKEN="+cliToolsToken, "HANDSET_CALL_ALLOW="+alice)
	callerTurns(context.Background(), t, o.rig, alice, 1, 0)
	var list struct{ Calls []apiCall }
	if code := o.api("GET", "/api/calls", nil, &list); code != 200 || len(list.Calls) != 1 {
		t.Fatalf("calls: %d %+v", code, list)
	}
	id := list.Calls[0].ID

	full := o.token
	o.token = cliToolsToken
	var e map[string]string
	if code := o.api("GET", "/api/calls", nil, &e); code != 403 || !strings.Contains(e["error"], "HANDSET_API_TOKEN") {
		t.Errorf("the list with the tools token: %d %v", code, e)
	}
	var c apiCall
	if code := o.api("GET", "/api/calls/"+id, nil, &c); code != 200 || c.ID != id || c.From != "" || c.To != "" || c.CallerHash == "" {
		t.Errorf("the call with the tools token: %d %+v", code, c)
	}
	if code := o.api("POST", "/api/calls", map[string]any{"to": bob}, &e); code != 403 || !strings.Contains(e["error"], "HANDSET_CALL_ALLOW") {
		t.Errorf("a call off the list with the tools token: %d %v", code, e)
	}
	var j apiJob
	if code := o.api("POST", "/api/calls", map[string]any{"to": alice}, &j); code != 202 || j.ID == 0 {
		t.Errorf("a call on the list with the tools token: %d %+v", code, j)
	}
	o.token = full
	if code := o.api("POST", "/api/calls", map[string]any{"to": bob}, &j); code != 202 {
		t.Errorf("a call off the list with the API token: %d %+v", code, j)
	}
}

// A handoff whose webhook keeps failing is answered (after the 10 s wait) with the
// webhook's own failure, and the job keeps that error; before, it was 503 "no node took
// the handoff … not running jobs", which also replaced the job's error.
func TestHandoffReportsTheWebhooksFailure(t *testing.T) {
	testpeer.Slow(t, "waits out the API's 10 s wait for a handoff")
	var posts atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"chat bridge down for maintenance"}`))
	}))
	defer hook.Close()
	o := startOutbound(t, nil, []string{"send it on telegram"}, "HANDSET_HANDOFF_URL="+hook.URL,
		"HANDSET_TOOLS_TOKEN="+cliToolsToken)
	callerTurns(context.Background(), t, o.rig, alice, 1, 0)
	var list struct{ Calls []apiCall }
	o.api("GET", "/api/calls", nil, &list)
	full := o.token
	o.token = cliToolsToken
	var answer struct {
		Error string `json:"error"`
		Job   apiJob `json:"job"`
	}
	code := o.api("POST", "/api/calls/"+list.Calls[0].ID+"/handoff", map[string]any{"channel": "telegram"}, &answer)
	const want = `handoff webhook: HTTP 503 {"error":"chat bridge down for maintenance"}`
	if code != 502 || answer.Error != want || answer.Job.State != "failed" {
		t.Fatalf("handoff: %d %+v\n%s", code, answer, o.logs.String())
	}
	o.token = full
	var stored struct {
		State    string `json:"state"`
		Error    string `json:"error"`
		Attempts int    `json:"attempts"`
	}
	o.api("GET", "/api/jobs/"+itoa(answer.Job.ID), nil, &stored)
	if stored.State != "failed" || stored.Error != want || stored.Attempts < 1 || int(posts.Load()) != stored.Attempts {
		t.Errorf("stored job: %+v after %d posts", stored, posts.Load())
	}
	raw, _ := json.Marshal(answer)
	if strings.Contains(string(raw), "not running jobs") {
		t.Errorf("the answer blames the node: %s", raw)
	}
}
