// Package voicetest holds what the conformance suites of the voice contracts (stttest,
// ttstest, agenttest) check alike: that an error is a ProviderError of the kind the call
// engine acts on, that Close returns at once, and that nothing a test started still runs.
// Import it only from those suites and tests.
package voicetest

import (
	"errors"
	"io"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/voice"
)

// WantKind fails t unless err is a *voice.ProviderError of one of kinds.
func WantKind(t testing.TB, what string, err error, kinds ...voice.ErrorKind) {
	t.Helper()
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		t.Errorf("%s: error %v (%T), want a *voice.ProviderError of kind %v", what, err, err, kinds)
		return
	}
	for _, k := range kinds {
		if pe.Kind == k {
			return
		}
	}
	t.Errorf("%s: %v is of kind %v, want %v", what, err, pe.Kind, kinds)
}

// CloseWithin calls c.Close and fails t if it takes longer than d.
func CloseWithin(t testing.TB, c io.Closer, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("Close still blocked after %v", d)
		return nil
	}
}

// NoneLeft fails t if a goroutine started after before (goleak.IgnoreCurrent) still runs.
// Connections kept in an HTTP client's pool, and the peer's end of them, belong to the
// client and the server, not to what the test closed; the provider's TestMain checks them
// once its peers are gone.
func NoneLeft(t testing.TB, before goleak.Option) {
	t.Helper()
	goleak.VerifyNone(t, before,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"))
}

// Bounded runs read on its own goroutine and waits at most bound for it to return: a
// stream that neither ends nor fails hangs its reader, and the test must not hang with it.
// When bound runs out, c is closed (so the reader can end) and t fails, saying what hung.
func Bounded(t testing.TB, bound time.Duration, c io.Closer, what string, read func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		read()
	}()
	select {
	case <-done:
	case <-time.After(bound):
		_ = c.Close()
		t.Fatalf("%s within %v", what, bound)
	}
}
