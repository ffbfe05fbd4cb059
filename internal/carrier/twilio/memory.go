package twilio

import (
	"context"
	"net/http"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
)

// IdempotencyHeader is the header Twilio repeats, with the same value, on every retry of
// one webhook request. It is not covered by the signature: a retry and a replay that
// copies it look alike, so it only tells the two apart in the log.
const IdempotencyHeader = "I-Twilio-Idempotency-Token"

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
	kept, first, err := c.opts.Memory.Remember(ctx, carrier.Answer{Ref: sid, RequestKey: idem, Body: body, At: c.opts.Now()})
	if err != nil {
		// Without the memory a replay cannot be told from a call: refuse, and let the
		// carrier try the number's fallback URL.
		c.log.Error("voice webhook refused: the call memory (the store) failed", "call_sid", sid, "err", err)
		http.Error(w, "call memory unavailable", http.StatusServiceUnavailable)
		return false
	}
	retry := idem != "" && idem == kept.RequestKey
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
	_, _ = w.Write(kept.Body)
	return first
}
