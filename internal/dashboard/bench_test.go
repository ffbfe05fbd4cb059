package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// benchPage measures one page's answer, rendered in full, signed in by bearer token.
func benchPage(b *testing.B, src *fakeSource, path string) {
	d := New(Options{Source: src, AdminToken: adminToken, Live: NewLive(), Hosts: []string{"handset.example"}})
	mux := http.NewServeMux()
	d.Register(mux)
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "handset.example"
	req.Header.Set("Authorization", "Bearer "+adminToken)
	for b.Loop() {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", path, w.Code, w.Body.String())
		}
	}
}

func BenchmarkCallsPage(b *testing.B) {
	src := &fakeSource{}
	at := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	for i := range 500 {
		src.calls = append(src.calls, store.Call{ID: voice.CallID(fmt.Sprintf("c_%04d", i)), Carrier: "twilio", Direction: voice.Inbound,
			From: "+15550102000", CallerHash: "ch_alice", StartedAt: at.Add(time.Duration(i) * time.Minute), EndedAt: at.Add(time.Duration(i)*time.Minute + 90*time.Second),
			Outcome: "caller_hangup", Summary: store.CallSummary{Turns: 4, Stage: "tts", Problem: "slow"}})
	}
	benchPage(b, src, "/dashboard")
}

func BenchmarkCallPage(b *testing.B) {
	src := &fakeSource{calls: []store.Call{{ID: "c_b", Direction: voice.Inbound, StartedAt: time.Now(), Journal: filepath.Join("testdata", "bargein.jsonl")}}}
	benchPage(b, src, "/dashboard/calls/c_b")
}
