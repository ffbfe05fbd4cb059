package jobs

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// noLiveCalls: every call has ended (handoffs of ended calls need no media node).
type noLiveCalls struct{}

func (noLiveCalls) Get(voice.CallID) (*call.Call, bool) { return nil, false }

// handoffRig is a store with one ended call and a runner for handoffs to url; run queues
// a handoff of the call and waits for its end.
func handoffRig(t *testing.T, url string) func(attempts int) store.Job {
	t.Helper()
	st := openStore(t)
	ctx := context.Background()
	now := time.Now()
	if err := st.StartCall(ctx, store.Call{ID: "c_1", Carrier: "twilio", Direction: voice.Inbound, From: "+15550102000",
		To: "+15550009999", CallerHash: "ch_1", StartedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.EndCall(ctx, "c_1", now, "caller_hangup"); err != nil {
		t.Fatal(err)
	}
	h := &Handoffs{Store: st, Calls: noLiveCalls{}, URL: url, Key: "hook-key-0123456789"}
	r := startRunner(t, Options{Store: st, Owner: "n1", Kinds: map[string]Kind{KindHandoff: {Run: h.Run}}})
	run := func(attempts int) store.Job {
		t.Helper()
		payload, _ := json.Marshal(HandoffJob{CallID: "c_1", Channel: "telegram"})
		j, err := st.Enqueue(ctx, store.NewJob{Kind: KindHandoff, Payload: payload, MaxAttempts: attempts})
		if err != nil {
			t.Fatal(err)
		}
		r.Wake()
		return waitJob(t, st, j.ID)
	}
	return run
}

// recorder is a server that records the requests it gets.
type recorder struct {
	mu   sync.Mutex
	seen []http.Header
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.seen = append(rec.seen, r.Header.Clone())
}

func (rec *recorder) requests() []http.Header {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.seen
}

// A webhook that redirects does not get the handoff key or the conversation sent on: not
// to another port of the same host (which Go's client would send Authorization to), not to
// another host. The job fails for good, saying to set the final URL.
func TestHandoffFollowsNoRedirect(t *testing.T) {
	elsewhere := &recorder{}
	other := httptest.NewServer(elsewhere)
	defer other.Close()
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound, http.StatusMovedPermanently} {
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/collect?token=secret-in-the-query", status)
		}))
		run := handoffRig(t, hook.URL)
		j := run(3)
		hook.Close()
		if j.State != store.JobFailed || j.Attempts != 1 || !strings.Contains(j.Error, "redirect") ||
			!strings.Contains(j.Error, other.URL+"/collect") || strings.Contains(j.Error, "secret-in-the-query") {
			t.Errorf("HTTP %d: job %s after %d attempts: %q", status, j.State, j.Attempts, j.Error)
		}
	}
	if got := elsewhere.requests(); len(got) != 0 {
		t.Errorf("the redirect's target got %d requests (Authorization %q)", len(got), got[0].Get("Authorization"))
	}
}

// The webhook's failure is the job's error: its status and a bounded part of its answer,
// cut on a rune.
func TestHandoffErrorIsTheWebhooks(t *testing.T) {
	huge := strings.Repeat("é", 50_000)
	for _, c := range []struct {
		status   int
		attempts int
		want     string
	}{
		{http.StatusServiceUnavailable, 1, "handoff webhook: HTTP 503 down: éé"},
		{http.StatusUnprocessableEntity, 1, "handoff webhook refused it: HTTP 422 down: éé"},
	} {
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte("down: " + huge))
		}))
		run := handoffRig(t, hook.URL)
		j := run(c.attempts)
		hook.Close()
		if j.State != store.JobFailed || j.Attempts != c.attempts || !strings.HasPrefix(j.Error, c.want) ||
			!strings.HasSuffix(j.Error, "é…") || len(j.Error) > 400 {
			t.Errorf("HTTP %d: job %s after %d attempts, %d bytes of error: %.120q", c.status, j.State, j.Attempts, len(j.Error), j.Error)
		}
	}
}
