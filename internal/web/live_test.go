package web

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/store"
)

// A transfer to something that is not a phone number is the request's to fix (400, with
// the reason), not a job that fails at the carrier (502); nothing is queued.
func TestMalformedTransferNumberIsABadRequest(t *testing.T) {
	r := newRig(t, nil)
	for _, to := range []string{"the billing desk", "+1 415 555 0100 ext 2", "555-0100", "+1234"} {
		code, data := r.do("POST", "/api/calls/"+string(liveCall)+"/transfer", "Bearer "+apiToken, `{"to":"`+to+`"}`)
		if msg := errorOf(data); code != 400 || !strings.HasPrefix(msg, "to: ") || !strings.Contains(msg, "E.164") {
			t.Errorf("transfer to %q: %d %s", to, code, data)
		}
	}
	list, err := r.st.Jobs(context.Background(), store.ListJobs{Kind: jobs.KindTransfer})
	must(t, err)
	if len(list) != 0 {
		t.Errorf("%d transfers queued", len(list))
	}
}

// A handoff whose webhook failed (and waits to be tried again when the request's wait runs
// out) is answered with the webhook's own failure, 502, and the job keeps that error and
// is not tried again. A handoff no node took is still 503, saying so.
func TestHandoffAnswersTheWebhooksFailure(t *testing.T) {
	r := newRig(t, func(o *Options) { o.LiveWait = 300 * time.Millisecond })
	const hookErr = "handoff webhook: HTTP 503 {\"error\":\"down for maintenance\"}"
	r.setAttempt(func(j store.Job) (string, string, bool) { return "", hookErr, true })
	var answer struct {
		Error string `json:"error"`
		Job   struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
			Error string `json:"error"`
		} `json:"job"`
	}
	code, data := r.do("POST", "/api/calls/"+string(liveCall)+"/handoff", "Bearer "+toolsToken, `{"channel":"telegram","hangup":true}`)
	must(t, json.Unmarshal(data, &answer))
	if code != 502 || answer.Error != hookErr || answer.Job.State != "failed" {
		t.Fatalf("handoff: %d %s", code, data)
	}
	j, err := r.st.Job(context.Background(), answer.Job.ID)
	must(t, err)
	if j.State != store.JobFailed || j.Error != hookErr || j.Attempts != 1 {
		t.Errorf("stored job: %s after %d attempts, error %q", j.State, j.Attempts, j.Error)
	}
	// Cancelled for good: a claim an hour later finds nothing.
	if _, ok, err := r.st.Claim(context.Background(), "n1", []string{jobs.KindHandoff}, time.Minute, time.Now().Add(2*time.Hour)); err != nil || ok {
		t.Errorf("the failed handoff can still be claimed: %v %v", ok, err)
	}

	r.setAttempt(nil) // the node runs no jobs
	code, data = r.do("POST", "/api/calls/"+string(liveCall)+"/handoff", "Bearer "+apiToken, `{"channel":"telegram"}`)
	if code != 503 || !strings.Contains(errorOf(data), "not running jobs") {
		t.Errorf("no node: %d %s", code, data)
	}
}

// Request values quoted in errors are cut to a few hundred bytes: a 100 KB value never
// makes a 100 KB answer or log line.
func TestEchoedInputIsBounded(t *testing.T) {
	r := newRig(t, nil)
	huge := strings.Repeat("é", 50_000) // 100 KB
	q := url.QueryEscape(huge)
	p := url.PathEscape(huge)
	body := func(fields string) string { return "{" + fields + "}" }
	full := "Bearer " + apiToken
	cases := []struct{ method, path, body string }{
		{"GET", "/api/calls?limit=" + q, ""},
		{"GET", "/api/calls?before=" + q, ""},
		{"GET", "/api/calls/" + p, ""},
		{"GET", "/api/jobs?state=" + q, ""},
		{"GET", "/api/jobs?limit=" + q, ""},
		{"GET", "/api/jobs?after=" + q, ""},
		{"GET", "/api/jobs/" + p, ""},
		{"GET", "/api/sessions/" + p, ""},
		{"POST", "/api/calls?wait=" + q, body(`"to":"` + alice + `"`)},
		{"POST", "/api/calls", body(`"to":"` + huge + `"`)},
		{"POST", "/api/calls", body(`"to":"+1` + strings.Repeat("5", 100_000) + `"`)},
		{"POST", "/api/calls", body(`"to":"` + alice + `","from":"` + huge + `"`)},
		{"POST", "/api/calls", body(`"to":"` + alice + `","on_machine":"` + huge + `"`)},
		{"POST", "/api/calls", body(`"` + huge + `":1`)},
		{"POST", "/api/calls/" + string(liveCall) + "/transfer", body(`"to":"` + huge + `"`)},
		{"POST", "/api/calls/" + p + "/transfer", body(`"to":"+15550001111"`)},
		{"POST", "/api/sessions/" + p + "/handoff", body(`"channel":"sms"`)},
		{"POST", "/api/deliver", body(`"session_key":"` + huge + `","message":"hi"`)},
		{"POST", "/api/deliver", body(`"call_id":"` + huge + `","message":"hi"`)},
		{"POST", "/api/deliver", body(`"caller_hash":"` + huge + `","message":"hi"`)},
	}
	for _, c := range cases {
		code, data := r.do(c.method, c.path, full, c.body)
		if code < 400 || len(data) > 1500 || !strings.Contains(errorOf(data), "…") {
			t.Errorf("%s %.60s… (%d): %d, %d bytes: %.200s", c.method, c.path, len(c.body), code, len(data), data)
		}
	}
	// An internal error logs the path it was about, bounded too.
	r.st.Close()
	if code, data := r.do("GET", "/api/calls/"+p, full, ""); code != 500 || len(data) > 1500 {
		t.Errorf("with the store closed: %d, %d bytes", code, len(data))
	}
	for _, line := range strings.Split(r.logs.String(), "\n") {
		if len(line) > 2500 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
	if !strings.Contains(r.logs.String(), "…") {
		t.Errorf("no bounded path in the log:\n%.500s", r.logs.String())
	}
}
