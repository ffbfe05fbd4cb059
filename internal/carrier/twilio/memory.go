package twilio

import "net/http"

// IdempotencyHeader is the header Twilio repeats, with the same value, on every retry of
// one webhook request. It is not covered by the signature: a retry and a replay that
// copies it look alike, so it only tells the two apart in the log.
const IdempotencyHeader = "I-Twilio-Idempotency-Token"

// answerOnce sends the first answer remembered for sid (see mediastream.Once.AnswerOnce),
// telling a carrier retry from a replay in the log by Twilio's idempotency header. It
// reports whether this request was the first, so the caller acts on a call only once.
func (c *Carrier) answerOnce(w http.ResponseWriter, r *http.Request, sid string, body []byte) bool {
	return c.once.AnswerOnce(w, r, sid, r.Header.Get(IdempotencyHeader), body)
}
