package fakeelevenlabs

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TTSBUSYONCE: the first request with the text is turned away as ElevenLabs does when a
// subscription's concurrency is used up; the next is spoken.
func TestBusyOnce(t *testing.T) {
	s := New(Options{})
	w := post(t, s, streamULaw, "", textBody("TTSBUSYONCE hello"))
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("first request answered %d, want 429", w.Code)
	}
	if status, _ := detail(t, w); status != "too_many_concurrent_requests" {
		t.Errorf("detail.status %q", status)
	}
	if w := post(t, s, streamULaw, "", textBody("TTSBUSYONCE hello")); w.Code != http.StatusOK || w.Body.Len() == 0 {
		t.Errorf("second request answered %d with %d bytes", w.Code, w.Body.Len())
	}
}

// TTSSTALL: nothing comes back, not even headers, until the client gives up.
func TestStallNeverAnswers(t *testing.T) {
	s := New(Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+streamULaw, strings.NewReader(textBody("TTSSTALL hello")))
	resp, err := srv.Client().Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a stalled request answered %d", resp.StatusCode)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the client's own deadline", err)
	}
	if reqs := s.Requests(); len(reqs) != 1 || reqs[0].Status != 0 {
		t.Errorf("recorded %+v, want one request never answered", reqs)
	}
}

// TTSCUT: the audio starts, then the connection breaks before its end.
func TestCutBreaksMidStream(t *testing.T) {
	s := New(Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	text := "TTSCUT this sentence is cut short"
	resp, err := srv.Client().Post(srv.URL+streamULaw, "application/json", strings.NewReader(textBody(text)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || err == nil {
		t.Fatalf("status %d, read err %v: want 200 and a broken body", resp.StatusCode, err)
	}
	if full := s.AudioBytes(text, outputFormats["ulaw_8000"]); len(got) == 0 || len(got) >= full {
		t.Errorf("got %d bytes of %d before the break, want some but not all", len(got), full)
	}
}
