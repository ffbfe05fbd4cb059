package openclaw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// A gateway that is starting (its sidecars still loading), restarting or suspended does
// not refuse for good: it asks to be asked again. openclaw 2026.9.6 says so three ways:
//
//   - the connect request fails with code UNAVAILABLE, retryable, a retryAfterMs hint and
//     details.reason "startup-sidecars" ("gateway starting; retry shortly"), or the
//     restart/suspension reasons, and the socket is closed with 1013;
//   - the socket is closed with 1013 (try again later) before any answer;
//   - the WebSocket upgrade is refused with HTTP 503 while admission is closed.
//
// Handset asks again after the gateway's hint, within the caller's context: a turn waits
// within its own limit, start-up within its probe.

// StartingError reports that the gateway answered but is not ready yet, and asked to be
// retried.
type StartingError struct {
	Said       string        // what the gateway said, for logs
	RetryAfter time.Duration // its hint; 0 when it gave none
}

func (e *StartingError) Error() string { return "the gateway is starting (" + e.Said + ")" }

// IsStarting reports whether err says the gateway is still starting (or restarting).
func IsStarting(err error) bool {
	var se *StartingError
	return errors.As(err, &se)
}

// Retry pauses: the gateway's hint kept within these bounds (the bounds its own client
// uses), else a pause that doubles from startMinWait up to startMaxWait.
const (
	startMinWait = 100 * time.Millisecond
	startMaxWait = 2 * time.Second
	startFirst   = 250 * time.Millisecond
)

// startPause is how long to wait before attempt n+1 (n counts from 0).
func startPause(n int, hint time.Duration) time.Duration {
	if hint > 0 {
		return min(max(hint, startMinWait), startMaxWait)
	}
	d := startFirst
	for i := 0; i < n && d < startMaxWait; i++ {
		d *= 2
	}
	return min(d, startMaxWait)
}

// startingFrom reads a refused connect: a retryable UNAVAILABLE is the gateway asking to
// be asked again.
func startingFrom(e *gatewayError) *StartingError {
	if e == nil || e.Code != "UNAVAILABLE" || !e.Retryable {
		return nil
	}
	return &StartingError{Said: clip(e.Message), RetryAfter: time.Duration(e.RetryAfterMs) * time.Millisecond}
}

// dialPatiently dials until the gateway is past its start-up: each time it says it is
// starting, it is asked again after a pause, for as long as ctx allows. Any other failure
// is returned at once. When ctx ends first, the error still says the gateway was starting.
func (a *Agent) dialPatiently(ctx context.Context) (*gwConn, error) {
	var last *StartingError
	for n := 0; ; n++ {
		c, err := a.dial(ctx)
		switch {
		case err == nil:
			if last != nil {
				a.log.Info("openclaw: the gateway is ready", "url", a.url, "attempts", n+1)
			}
			return c, nil
		case ctx.Err() != nil || a.ctx.Err() != nil:
			return nil, a.gaveUp(ctx, last, n, err)
		case !errors.As(err, &last):
			return nil, err
		case n == 0:
			a.log.Info("openclaw: the gateway is starting; asking again shortly", "url", a.url, "said", last.Said)
		}
		t := time.NewTimer(startPause(n, last.RetryAfter))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, a.gaveUp(ctx, last, n, nil)
		case <-a.ctx.Done():
			t.Stop()
			return nil, a.gaveUp(ctx, last, n, nil)
		}
	}
}

// gaveUp is the error of a dial ended by ctx (or by Close) rather than by the gateway:
// canceled or timed out, and still saying the gateway was starting when it was.
func (a *Agent) gaveUp(ctx context.Context, last *StartingError, n int, err error) error {
	if ctx.Err() == nil { // the Agent was closed
		return a.fail("connect", voice.KindCanceled, errClosed)
	}
	kind := voice.KindCanceled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		kind = voice.KindTimeout
	}
	if last == nil {
		return a.fail("connect", kind, fmt.Errorf("%w (%v)", ctx.Err(), err))
	}
	return a.fail("connect", kind, fmt.Errorf("%w: gave up after %d attempts: %w", last, n+1, ctx.Err()))
}

// WaitingTransport is for the gateway's OpenAI-compatible HTTP endpoint (the http
// transport): while the gateway's plugin runtime is still starting it answers 503
// ("Plugin runtime is starting", Retry-After: 1), and the request is sent again after its
// hint, for as long as the request's context allows. The last 503 is returned when the
// context ends first. Requests without a way to re-read their body are sent once.
func WaitingTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return waitingTransport{next}
}

type waitingTransport struct{ next http.RoundTripper }

func (t waitingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for n := 0; ; n++ {
		try := req
		if n > 0 {
			try = req.Clone(ctx)
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				try.Body = body
			}
		}
		resp, err := t.next.RoundTrip(try)
		once := req.Body != nil && req.Body != http.NoBody && req.GetBody == nil
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || once {
			return resp, err
		}
		// Keep what the gateway said, for the error when Handset stops asking.
		said, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(said))
		hint := time.Duration(0)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			hint = time.Duration(s) * time.Second
		}
		timer := time.NewTimer(startPause(n, hint))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return resp, nil
		}
	}
}
