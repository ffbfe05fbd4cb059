package mediastream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
)

// MemoryTimeout bounds a memory call made while a carrier waits on a request.
const MemoryTimeout = 5 * time.Second

// ErrMemoryUnavailable: the call memory (the store) failed, so a repeat cannot be told
// from a call; the carrier should try again later or elsewhere.
var ErrMemoryUnavailable = errors.New("call memory unavailable")

// Outcome is what the memory says of a call's answer.
type Outcome int

const (
	// First: this answer is the call's first; act on the call.
	First Outcome = iota
	// Repeat: a retry (or a replay) before the stream opened; give the kept answer again
	// and do not act on the call twice.
	Repeat
	// Connected: the call's stream has opened already; refuse (HTTP 409).
	Connected
)

// Once applies the rules that make a repeated webhook harmless and a stream open once,
// for every node, through the carrier's Memory.
type Once struct {
	Memory carrier.Memory
	Now    func() time.Time
	Log    *slog.Logger
	// RefKey is the log attribute naming the carrier's call id ("call_sid").
	RefKey string
	// ContentType is the answer body's, for AnswerOnce ("text/xml").
	ContentType string
}

// RememberOnce keeps body as ref's first answer unless one is kept, and says which answer
// stands. requestKey is what the carrier repeats on a retry of the same request (may be
// empty). An error (wrapping ErrMemoryUnavailable) means refuse: a carrier whose answer
// is a REST command (not an HTTP body) uses this directly.
func (o Once) RememberOnce(ctx context.Context, ref, requestKey string, body []byte) (kept carrier.Answer, _ Outcome, _ error) {
	ctx, cancel := context.WithTimeout(ctx, MemoryTimeout)
	defer cancel()
	kept, first, err := o.Memory.Remember(ctx, carrier.Answer{Ref: ref, RequestKey: requestKey, Body: body, At: o.now()})
	if err != nil {
		// Without the memory a replay cannot be told from a call: refuse, and let the
		// carrier try the number's fallback.
		o.log().Error("voice webhook refused: the call memory (the store) failed", o.refKey(), ref, "err", err)
		return kept, 0, fmt.Errorf("%w: %w", ErrMemoryUnavailable, err)
	}
	retry := requestKey != "" && requestKey == kept.RequestKey
	switch {
	case first:
		return kept, First, nil
	case kept.Streamed:
		o.log().Warn("refused a repeated voice webhook: the call's media stream has opened already (a replayed request?)",
			o.refKey(), ref, "carrier_retry", retry)
		return kept, Connected, nil
	}
	o.log().Info("repeated voice webhook answered as the first", o.refKey(), ref, "carrier_retry", retry)
	return kept, Repeat, nil
}

// AnswerOnce writes the first answer remembered for ref: body when this request is the
// first, the kept one when a retry (or a replay) comes before the call's stream opened,
// 409 once it has, and 503 when the memory fails. It reports whether this request was the
// first, so the caller acts on a call only once.
func (o Once) AnswerOnce(w http.ResponseWriter, r *http.Request, ref, requestKey string, body []byte) bool {
	kept, outcome, err := o.RememberOnce(r.Context(), ref, requestKey, body)
	switch {
	case err != nil:
		http.Error(w, "call memory unavailable", http.StatusServiceUnavailable)
		return false
	case outcome == Connected:
		http.Error(w, "call already connected", http.StatusConflict)
		return false
	}
	if o.ContentType != "" {
		w.Header().Set("Content-Type", o.ContentType)
	}
	_, _ = w.Write(kept.Body)
	return outcome == First
}

// StreamOnce records that ref's stream opened, so every node refuses a second one:
// ErrTokenReused when it had opened already, carrier.ErrCallUnknown when no answer is
// kept for it, an error wrapping ErrMemoryUnavailable when the memory failed (refuse with
// "try again later").
func (o Once) StreamOnce(ref string) error {
	ctx, cancel := context.WithTimeout(context.Background(), MemoryTimeout)
	defer cancel()
	err := o.Memory.Streamed(ctx, ref, o.now())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, carrier.ErrStreamOpened):
		return ErrTokenReused
	case errors.Is(err, carrier.ErrCallUnknown):
		return carrier.ErrCallUnknown
	}
	return fmt.Errorf("%w: %w", ErrMemoryUnavailable, err)
}

func (o Once) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

func (o Once) log() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}

func (o Once) refKey() string {
	if o.RefKey == "" {
		return "call_ref"
	}
	return o.RefKey
}
