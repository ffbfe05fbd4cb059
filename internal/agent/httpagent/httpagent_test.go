package httpagent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

var testOrigin = Origin{Provider: "test", Op: "turn"}

// wantKind fails unless err is a *voice.ProviderError of kind from testOrigin.
func wantKind(t *testing.T, err error, kind voice.ErrorKind) *voice.ProviderError {
	t.Helper()
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *voice.ProviderError", err, err)
	}
	if pe.Kind != kind || pe.Provider != "test" || pe.Op != "turn" {
		t.Fatalf("error %v: kind %s provider %q op %q, want %s from test/turn", err, pe.Kind, pe.Provider, pe.Op, kind)
	}
	return pe
}

// waitDone waits for ctx to end, failing the test after a bound generous for any machine.
func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the context never ended")
	}
}

func TestSilenceIsATimeout(t *testing.T) {
	w := NewWatch(t.Context(), 20*time.Millisecond)
	waitDone(t, w.Context())
	if !w.Silent() {
		t.Fatalf("cause %v, want ErrSilent", context.Cause(w.Context()))
	}
	err := Aborted(testOrigin, w, false, errors.New("read: closed"), "read stream")
	wantKind(t, err, voice.KindTimeout)
	if !strings.Contains(err.Error(), "read stream: runtime silent for 20ms") {
		t.Errorf("message %q does not say what timed out", err)
	}
}

func TestStopWinsOverALaterSilence(t *testing.T) {
	w := NewWatch(t.Context(), time.Millisecond)
	w.Stop(ErrClosed)
	w.Touch() // after Stop: must not re-arm the watchdog
	waitDone(t, w.Context())
	if w.Silent() {
		t.Fatal("a stopped watch was cancelled for silence")
	}
	err := Aborted(testOrigin, w, false, io.ErrUnexpectedEOF, "")
	wantKind(t, err, voice.KindCanceled)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrClosed) {
		t.Errorf("error %v does not wrap context.Canceled and ErrClosed", err)
	}
}

func TestCallerCancelKeepsItsCause(t *testing.T) {
	hungUp := errors.New("caller hung up")
	parent, cancel := context.WithCancelCause(t.Context())
	w := NewWatch(parent, time.Hour)
	defer w.Stop(ErrClosed)
	cancel(hungUp)
	err := Aborted(testOrigin, w, false, errors.New("read: closed"), "read stream")
	wantKind(t, err, voice.KindCanceled)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, hungUp) {
		t.Errorf("error %v does not wrap context.Canceled and the caller's cause", err)
	}
}

func TestCallerDeadlineIsATimeout(t *testing.T) {
	parent, cancel := context.WithDeadline(t.Context(), time.Now())
	defer cancel()
	w := NewWatch(parent, time.Hour)
	defer w.Stop(ErrClosed)
	err := Aborted(testOrigin, w, false, errors.New("x"), "")
	wantKind(t, err, voice.KindTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

func TestClosedIsCanceled(t *testing.T) {
	w := NewWatch(t.Context(), time.Hour)
	defer w.Stop(ErrClosed)
	err := Aborted(testOrigin, w, true, ErrClosed, "read answer")
	wantKind(t, err, voice.KindCanceled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", err)
	}
}

// deadURL is the URL of a server that no longer listens.
func deadURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func TestNetworkFailureDropsTheURL(t *testing.T) {
	w := NewWatch(t.Context(), time.Hour)
	defer w.Stop(ErrClosed)
	req, err := http.NewRequest(http.MethodPost, deadURL(t)+"/hook/tok-path?token=secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Send(testOrigin, http.DefaultClient, w, req, func(int, []byte) error { return nil })
	wantKind(t, err, voice.KindTransient)
	if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "tok-path") {
		t.Errorf("error leaks the URL: %v", err)
	}
}

func TestSendClassifiesStatus(t *testing.T) {
	cause := errors.New("vendor says no")
	tests := []struct {
		status     int
		retryAfter string
		kind       voice.ErrorKind
		note       string // what the error says of Retry-After ("" for nothing)
	}{
		{http.StatusTooManyRequests, "7", voice.KindQuota, "(retry after 7 s)"},
		{http.StatusServiceUnavailable, "Wed, 21 Oct 2026 07:28:00 GMT", voice.KindTransient, "(retry after Wed, 21 Oct 2026 07:28:00 GMT)"},
		{http.StatusTooManyRequests, "soon", voice.KindQuota, ""},
		{http.StatusUnauthorized, "", voice.KindAuth, ""},
		{http.StatusBadRequest, "-3", voice.KindBadInput, ""},
	}
	for _, tc := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if tc.retryAfter != "" {
				rw.Header().Set("Retry-After", tc.retryAfter)
			}
			rw.WriteHeader(tc.status)
			_, _ = io.WriteString(rw, `{"error":"no"}`)
		}))
		w := NewWatch(t.Context(), time.Hour)
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		var gotStatus int
		var gotBody string
		_, err := Send(testOrigin, srv.Client(), w, req, func(status int, body []byte) error {
			gotStatus, gotBody = status, string(body)
			return cause
		})
		w.Stop(ErrClosed)
		srv.Close()
		pe := wantKind(t, err, tc.kind)
		if pe.Status != tc.status || gotStatus != tc.status || gotBody != `{"error":"no"}` {
			t.Errorf("%d: status %d, describe saw %d %q", tc.status, pe.Status, gotStatus, gotBody)
		}
		if !errors.Is(err, cause) {
			t.Errorf("%d: error %v does not wrap describe's cause", tc.status, err)
		}
		if got := strings.Contains(err.Error(), "retry after"); got != (tc.note != "") || !strings.Contains(err.Error(), tc.note) {
			t.Errorf("%d with Retry-After %q: error %q, want note %q", tc.status, tc.retryAfter, err, tc.note)
		}
	}
}

func TestSendReturnsA2xxBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(rw, "hello")
	}))
	defer srv.Close()
	w := NewWatch(t.Context(), time.Hour)
	defer w.Stop(ErrClosed)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := Send(testOrigin, srv.Client(), w, req, func(int, []byte) error { return errors.New("unused") })
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(w.Reader(resp.Body))
	if err != nil || string(b) != "hello" {
		t.Errorf("body %q, %v", b, err)
	}
}

func TestHeaderChecks(t *testing.T) {
	for _, bad := range [][2]string{{"", "v"}, {"Bad Name", "v"}, {"X:y", "v"}, {"X-Ok", "v\r\nInjected: 1"}, {"X-Ok", "a\x00"}, {"Ä", "v"}} {
		if CheckHeader(bad[0], bad[1]) == nil {
			t.Errorf("CheckHeader(%q, %q) accepted", bad[0], bad[1])
		}
		if _, err := Headers(map[string]string{bad[0]: bad[1]}); err == nil {
			t.Errorf("Headers accepted %q: %q", bad[0], bad[1])
		}
	}
	h, err := Headers(map[string]string{"x-memory-key": "k 1", "X-Ok": ""})
	if err != nil || h.Get("X-Memory-Key") != "k 1" || len(h) != 2 {
		t.Errorf("Headers: %v, %v", h, err)
	}
	if CheckKey("a\nb") == nil || CheckKey("a\rb") == nil || CheckKey("a\x00") == nil || CheckKey("sk-ok") != nil || CheckKey("") != nil {
		t.Error("CheckKey: wrong verdicts")
	}
}

func TestURLs(t *testing.T) {
	redact := map[string]string{
		"https://user:pw@h:99/x?token=secret#frag": "https://h:99/x",
		"http://h/v1?":                         "http://h/v1",
		"http://h/v1":                          "http://h/v1",
		"https://user:pw@h:99x/x?token=secret": "(unparsable)",
	}
	for in, want := range redact {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	valid := map[string]bool{
		"http://h": true, "https://h:8642/v1": true, "ftp://h/x": false, "http:///path": false,
		"h/v1": false, "": false, "http://h:99x": false,
	}
	for in, want := range valid {
		if got := ValidURL(in); got != want {
			t.Errorf("ValidURL(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestMediaType(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "  ": "", "text/event-stream": "text/event-stream",
		"Application/JSON; charset=utf-8": "application/json", "text/plain; charset": "text/plain",
	} {
		if got := MediaType(in); got != want {
			t.Errorf("MediaType(%q) = %q, want %q", in, got, want)
		}
	}
}
