package carrier

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

func TestClassifyProvider(t *testing.T) {
	pe := func(kind voice.ErrorKind, status int) error {
		return &voice.ProviderError{Provider: "x", Op: "y", Kind: kind, Status: status, Err: errors.New("z")}
	}
	gone := errors.New("gone")
	for _, tc := range []struct {
		err  error
		want error
	}{
		{pe(voice.KindBadInput, 404), ErrNotFound},
		{pe(voice.KindAuth, 401), ErrAuth},
		{pe(voice.KindBadInput, 0), ErrInvalid},
		{pe(voice.KindBadInput, 422), ErrRejected},
		{pe(voice.KindTransient, 503), ErrUnreachable},
		{pe(voice.KindQuota, 429), ErrUnreachable},
		{pe(voice.KindTimeout, 0), ErrUnreachable},
		{&voice.ProviderError{Kind: voice.KindBadInput, Status: 400, Err: gone}, ErrNotFound},
	} {
		got := ClassifyProvider(tc.err, func(err error) bool { return errors.Is(err, gone) })
		if !errors.Is(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.err, got, tc.want)
		}
	}
	canceled := pe(voice.KindCanceled, 0)
	if got := ClassifyProvider(canceled, nil); got != canceled {
		t.Errorf("a cancellation was classified: %v", got)
	}
	once := Classify(ErrAuth, pe(voice.KindTransient, 503))
	if got := ClassifyProvider(once, nil); !errors.Is(got, ErrAuth) || errors.Is(got, ErrUnreachable) {
		t.Errorf("a classified error was classified again: %v", got)
	}
}

func TestAPICallFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			<-r.Context().Done()
		case "/refused":
			w.WriteHeader(http.StatusForbidden)
		default:
			_, _ = w.Write([]byte("not json"))
		}
	}))
	defer srv.Close()
	refusal := errors.New("refused")
	c := APICall{Provider: "x", Client: srv.Client(), Timeout: 50 * time.Millisecond, Limit: 1 << 10,
		Refusal: func(int, []byte) error { return refusal }}
	for path, want := range map[string]voice.ErrorKind{"/slow": voice.KindTimeout, "/refused": voice.KindAuth, "/bad": voice.KindProtocol} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		var out struct{}
		err := c.JSON(context.Background(), "op", req, &out)
		if voice.KindOf(err) != want || (path == "/refused" && !errors.Is(err, refusal)) {
			t.Errorf("%s: %v, want kind %v", path, err, want)
		}
	}
}
