package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/sqlite"
	"github.com/handset-voice/handset/internal/voice"
)

const (
	apiToken   = "api-token-0123456789abcdef0123456789abcdef"
	toolsToken = "tools-token-0123456789abcdef0123456789ab"
	liveCall   = voice.CallID("c_live")
	endedCall  = voice.CallID("c_ended")
	alice      = "+15550102000" // on the test's HANDSET_CALL_ALLOW (+1555010*)
	ourNumber  = "+15550009999"
	stranger   = "+19005550000" // on no allow-list
	sessionKey = "handset:ch_alice"
)

// rig is the API over a real SQLite store holding a live call and an ended one of one
// caller, with a fake node that holds the calls.
type rig struct {
	t     *testing.T
	st    store.Store
	srv   *httptest.Server
	logs  *syncBuffer
	jobID int64 // a job queued at the start

	mu sync.Mutex
	// attempt ends each transfer or handoff attempt the node runs: a result, or an error
	// and whether to try again. nil: the node runs nothing (it is not running jobs).
	attempt func(j store.Job) (result string, errMsg string, retry bool)
}

func newRig(t *testing.T, edit func(*Options)) *rig {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "handset.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	for _, id := range []voice.CallID{endedCall, liveCall} {
		must(t, st.StartCall(ctx, store.Call{ID: id, Carrier: "twilio", CarrierRef: "CA" + string(id), Direction: voice.Inbound,
			From: alice, To: ourNumber, CallerHash: "ch_alice", Agent: "echo", Node: "n1", StartedAt: now}))
		_, err := st.TouchSession(ctx, "ch_alice", sessionKey, id, now)
		must(t, err)
	}
	must(t, st.EndCall(ctx, endedCall, now, "caller_hangup"))
	must(t, st.AppendTranscript(ctx, []store.TranscriptLine{{CallID: liveCall, Turn: 1, Role: voice.RoleUser, Text: "hello", At: now}}))
	j, err := st.Enqueue(ctx, store.NewJob{Kind: "nothing", Payload: []byte(`{}`)})
	must(t, err)

	r := &rig{t: t, st: st, logs: &syncBuffer{}, jobID: j.ID}
	r.attempt = func(store.Job) (string, string, bool) { return `{"ok":true}`, "", false }
	allow, err := jobs.ParseAllowList("+1555010*")
	must(t, err)
	o := Options{Token: apiToken, ToolsToken: toolsToken, CallAllow: allow, Store: st,
		Channels: map[string]jobs.Channel{"twilio": jobs.ChannelFunc(func() error { return nil })},
		Wake:     r.node, LiveWait: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(r.logs, nil))}
	if edit != nil {
		edit(&o)
	}
	mux := http.NewServeMux()
	api := New(o)
	api.Register(mux)
	mux.Handle("/debug/pprof/", api.Protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "profile") })))
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// node is woken when a job is queued. It runs one attempt of a transfer or handoff at once,
// before the request starts waiting, so what the test asserts never hangs on a timer.
func (r *rig) node() {
	r.mu.Lock()
	attempt := r.attempt
	r.mu.Unlock()
	if attempt == nil {
		return
	}
	ctx := context.Background()
	j, ok, err := r.st.Claim(ctx, "n1", []string{jobs.KindTransfer, jobs.KindHandoff}, time.Minute, time.Now())
	if err != nil || !ok {
		return
	}
	result, errMsg, retry := attempt(j)
	if errMsg == "" {
		must(r.t, r.st.Complete(ctx, j.ID, "n1", []byte(result), time.Now()))
		return
	}
	var retryAt time.Time
	if retry {
		retryAt = time.Now().Add(time.Hour)
	}
	must(r.t, r.st.Fail(ctx, j.ID, "n1", errMsg, retryAt, time.Now()))
}

func (r *rig) setAttempt(f func(store.Job) (string, string, bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempt = f
}

// do sends a request with Authorization (when not empty) and returns the status and the
// raw answer.
func (r *rig) do(method, path, auth, body string) (int, []byte) {
	r.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.srv.URL+path, rd)
	must(r.t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := r.srv.Client().Do(req)
	must(r.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	must(r.t, err)
	return resp.StatusCode, data
}

func errorOf(data []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
