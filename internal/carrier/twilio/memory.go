package twilio

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// IdempotencyHeader is the header Twilio repeats, with the same value, on every retry of
// one webhook request. It is not covered by the signature: a retry and a replay that
// copies it look alike, so it only tells the two apart in the log.
const IdempotencyHeader = "I-Twilio-Idempotency-Token"

// Memory errors.
var (
	// ErrStreamOpened: the call's media stream has opened already.
	ErrStreamOpened = errors.New("the call's media stream has opened already")
	// ErrCallUnknown: no webhook answer is remembered for the call.
	ErrCallUnknown = errors.New("no webhook answer is remembered for the call")
)

// Answer is what the voice webhook answered for a call.
type Answer struct {
	CallSid          string
	IdempotencyToken string // the first request's I-Twilio-Idempotency-Token; may be empty
	TwiML            []byte
	At               time.Time
	Streamed         bool // the call's media stream has opened
}

// Memory remembers, for every node at once (the server gives it the store), each call's
// first webhook answer and whether its media stream has opened. It is what makes a stream
// token one-time across a cluster and a repeated webhook harmless.
type Memory interface {
	// Remember keeps a as a.CallSid's answer unless one is kept, and returns the kept one
	// and whether it is a.
	Remember(ctx context.Context, a Answer) (kept Answer, first bool, err error)
	// Streamed records that callSid's media stream opened at `at`: ErrStreamOpened when it
	// had already, ErrCallUnknown when no answer is kept.
	Streamed(ctx context.Context, callSid string, at time.Time) error
}

// memoryTimeout bounds a memory call made while Twilio waits on a request.
const memoryTimeout = 5 * time.Second

// answerOnce sends the first answer remembered for sid: body when this request is the
// first, the kept one when a carrier retry (or a replay) comes before the call's stream
// opened, and 409 once it has. It reports whether this request was the first, so the
// caller acts on a call only once.
func (c *Carrier) answerOnce(w http.ResponseWriter, r *http.Request, sid string, body []byte) bool {
	idem := r.Header.Get(IdempotencyHeader)
	ctx, cancel := context.WithTimeout(r.Context(), memoryTimeout)
	defer cancel()
	kept, first, err := c.opts.Memory.Remember(ctx, Answer{CallSid: sid, IdempotencyToken: idem, TwiML: body, At: c.opts.Now()})
	if err != nil {
		// Without the memory a replay cannot be told from a call: refuse, and let the
		// carrier try the number's fallback URL.
		c.log.Error("voice webhook refused: the call memory (the store) failed", "call_sid", sid, "err", err)
		http.Error(w, "call memory unavailable", http.StatusServiceUnavailable)
		return false
	}
	retry := idem != "" && idem == kept.IdempotencyToken
	switch {
	case first:
	case kept.Streamed:
		c.log.Warn("refused a repeated voice webhook: the call's media stream has opened already (a replayed request?)",
			"call_sid", sid, "carrier_retry", retry)
		http.Error(w, "call already connected", http.StatusConflict)
		return false
	default:
		c.log.Info("repeated voice webhook answered as the first", "call_sid", sid, "carrier_retry", retry)
	}
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write(kept.TwiML)
	return first
}
