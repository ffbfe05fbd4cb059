package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/sqlite"
	"github.com/handset-voice/handset/internal/voice"
)

const (
	ourLine = "+15550009999"
)

var secret = []byte("test-secret")

// The raw identifiers of the people in the fixture: none may appear in a default answer.
var rawIDs = []string{"5550102000", "266696687", "5550104000", "sip:bob", "anonymous"}

type fixture struct {
	srv      *httptest.Server
	st       store.Store
	aliceKey string
}

// newFixture serves the API over a store holding: alice's call and session; a withheld
// caller's call; an anonymous caller's call hashed by an older Handset (a session on the
// placeholder number); an unverified caller's call; a SIP caller's call and session.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "handset.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	at := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	hash := func(n string) string { return session.CallerHash(secret, n) }
	add := func(id, from, callerHash string) {
		t.Helper()
		if err := st.StartCall(ctx, store.Call{ID: voice.CallID(id), Carrier: "twilio", Direction: voice.Inbound,
			From: from, To: ourLine, CallerHash: callerHash, StartedAt: at}); err != nil {
			t.Fatal(err)
		}
		if err := st.EndCall(ctx, voice.CallID(id), at.Add(time.Minute), "caller_hangup"); err != nil {
			t.Fatal(err)
		}
		if callerHash != "" {
			if _, err := st.TouchSession(ctx, callerHash, "handset:"+callerHash, voice.CallID(id), at); err != nil {
				t.Fatal(err)
			}
		}
		at = at.Add(time.Hour)
	}
	add("c_alice", alice, hash(alice))
	add("c_anon", "Anonymous", hash("Anonymous"))
	add("c_legacy", "+266696687", "ch_000000000000000000legacy")
	add("c_unverified", "+15550104000", "")
	add("c_sip", "sip:bob@example.com", hash("sip:bob@example.com"))
	if hash("Anonymous") != "" {
		t.Fatal("a withheld caller has a caller hash")
	}
	api := New(Options{Token: apiToken, Store: st, CallerHash: hash,
		Channels: map[string]jobs.Channel{"twilio": jobs.ChannelFunc(func() error { return nil })}})
	mux := http.NewServeMux()
	api.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, st: st, aliceKey: "handset:" + hash(alice)}
}

// do sends a request with the API token and returns the status and body.
func (f *fixture) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func noRawIDs(t *testing.T, what, body string) {
	t.Helper()
	for _, id := range rawIDs {
		if strings.Contains(strings.ToLower(body), strings.ToLower(id)) {
			t.Errorf("%s names a caller by %q: %s", what, id, body)
		}
	}
}

// Callers Handset cannot call back are refused with a 422 that says why without quoting
// their number, and nothing is queued or dialled.
func TestDeliverRefusesCallersWithoutANumber(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ body, why string }{
		{`{"call_id":"c_anon","message":"hi"}`, "withheld their number"},
		{`{"session_key":"handset:ch_000000000000000000legacy","message":"hi"}`, "withheld their number"},
		{`{"call_id":"c_unverified","message":"hi"}`, "HANDSET_CALLER_MEMORY_ATTESTATION"},
		{`{"session_key":"agent:support:handset:call:c_unverified","message":"hi"}`, "not verified"},
		{`{"session_key":"handset:` + session.CallerHash(secret, "sip:bob@example.com") + `","message":"hi"}`, "not a phone number"},
	} {
		code, body := f.do(t, "POST", "/api/deliver", tc.body)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, tc.why) {
			t.Errorf("%s: %d %s, want 422 saying %q", tc.body, code, body, tc.why)
		}
		noRawIDs(t, "the refusal of "+tc.body, body)
	}
	if list, err := f.st.Jobs(context.Background(), store.ListJobs{}); err != nil || len(list) != 0 {
		t.Errorf("jobs queued for callers who cannot be called back: %+v %v", list, err)
	}
}

// The default view names people by caller hash and session key; ?view=admin adds numbers.
func TestAnswersNameCallersOnlyByHash(t *testing.T) {
	f := newFixture(t)
	code, body := f.do(t, "POST", "/api/deliver", `{"session_key":"`+f.aliceKey+`","message":"Your order shipped."}`)
	if code != http.StatusAccepted {
		t.Fatalf("deliver to alice: %d %s", code, body)
	}
	noRawIDs(t, "the delivery's answer", body)
	var queued struct {
		ID      int64 `json:"id"`
		Payload struct {
			To         string `json:"to"`
			CallerHash string `json:"caller_hash"`
			SessionKey string `json:"session_key"`
		} `json:"payload"`
	}
	if err := json.Unmarshal([]byte(body), &queued); err != nil || queued.Payload.CallerHash != strings.TrimPrefix(f.aliceKey, "handset:") ||
		queued.Payload.SessionKey != f.aliceKey || queued.Payload.To != "" {
		t.Errorf("the queued delivery: %s (%v)", body, err)
	}
	job := "/api/jobs/" + itoa(queued.ID)
	for _, path := range []string{"/api/calls", "/api/calls/c_alice", "/api/calls/c_anon", "/api/sessions/" + f.aliceKey,
		"/api/jobs", job, "/api/jobs?kind=outbound_call"} {
		code, body := f.do(t, "GET", path, "")
		if code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
		noRawIDs(t, "GET "+path, body)
		if path == "/api/calls" && !strings.Contains(body, ourLine) {
			t.Errorf("Handset's own line went missing: %s", body)
		}
	}
	if _, body := f.do(t, "GET", "/api/calls/c_anon", ""); !strings.Contains(body, `"caller": "withheld"`) {
		t.Errorf("a withheld caller's call does not say so: %s", body)
	}
	for path, want := range map[string]string{
		"/api/sessions/" + f.aliceKey + "?view=admin": `"from": "` + alice + `"`,
		job + "?view=admin":                           `"to": "` + alice + `"`,
		"/api/jobs?view=admin":                        `"to": "` + alice + `"`,
		"/api/calls?view=admin":                       "sip:bob@example.com",
	} {
		if code, body := f.do(t, "GET", path, ""); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want %s in %s", path, code, want, body)
		}
	}
	if code, body := f.do(t, "GET", "/api/calls?view=raw", ""); code != http.StatusBadRequest || !strings.Contains(body, "view") {
		t.Errorf("an unknown view: %d %s", code, body)
	}
}

// A call job's error quoting the number (a carrier's refusal) names the caller hash instead.
func TestJobErrorsDropTheNumber(t *testing.T) {
	v := viewer{hash: func(n string) string { return session.CallerHash(secret, n) }}
	j := store.Job{ID: 7, Kind: jobs.KindCall, State: store.JobFailed,
		Payload: []byte(`{"to":"` + alice + `","from":"` + ourLine + `","first_message":"hi","deliver":true}`),
		Error:   "the carrier refused the call: The 'To' number " + alice + " is not a valid phone number (also 15550102000)"}
	got := v.job(j)
	out, _ := json.Marshal(got)
	noRawIDs(t, "the failed job", string(out))
	if !strings.Contains(got.Error, "caller "+session.CallerHash(secret, alice)) || !strings.Contains(string(got.Payload), ourLine) {
		t.Errorf("redacted job: %s", out)
	}
	if admin := (viewer{admin: true}).job(j); admin.Error != j.Error || string(admin.Payload) != string(j.Payload) {
		t.Errorf("the admin view changed the job: %+v", admin)
	}
	// A transfer's target is the agent's own choice, kept as given.
	tr := store.Job{Kind: jobs.KindTransfer, Payload: []byte(`{"call_id":"c_1","to":"+15550001111"}`), Error: "refused: +19005550000 is not on the transfer allow-list"}
	if got := v.job(tr); got.Error != tr.Error || string(got.Payload) != string(tr.Payload) {
		t.Errorf("transfer job changed: %+v", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A caller without a caller hash has the call's own session (OpenClaw files it under
// handset:call:<id>): the session routes find that call.
func TestPerCallSessionKeyFindsItsCall(t *testing.T) {
	f := newFixture(t)
	api := New(Options{Token: apiToken, Store: f.st, LiveWait: 50 * time.Millisecond})
	mux := http.NewServeMux()
	api.Register(mux)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	code, body := f.do(t, "POST", "/api/sessions/agent:support:handset:call:c_unverified/handoff", `{"channel":"sms"}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "handoff of call c_unverified") {
		t.Errorf("handoff by the per-call key: %d %s (no node runs jobs here: want it queued for the call, then withdrawn)", code, body)
	}
	if code, body := f.do(t, "POST", "/api/sessions/handset:call:c_nobody/handoff", `{"channel":"sms"}`); code != http.StatusNotFound {
		t.Errorf("an unknown call's key: %d %s", code, body)
	}
}
