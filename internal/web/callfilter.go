package web

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Bounds on GET /api/calls's query parameters.
const (
	maxFilterName = 64  // outcome, carrier
	maxCallID     = 128 // before_id
	maxQuery      = 500 // q, in bytes
)

// callFilter reads GET /api/calls's query parameters: caller_hash, since and before (RFC
// 3339 times), before_id (the last call of the previous page, with before), outcome,
// carrier, live and broken (true or false), q (words of the transcript) and limit (1 to
// 500). A bad value is a 400 that names the parameter.
func callFilter(q url.Values) (store.ListCalls, error) {
	f := store.ListCalls{CallerHash: q.Get("caller_hash"), Text: q.Get("q")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxListCalls {
			return f, fail(http.StatusBadRequest, "limit %q: a whole number from 1 to %d", echo(v), store.MaxListCalls)
		}
		f.Limit = n
	}
	for name, t := range map[string]*time.Time{"before": &f.Before, "since": &f.Since} {
		if v := q.Get(name); v != "" {
			parsed, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return f, fail(http.StatusBadRequest, "%s %q: an RFC 3339 time, like 2026-11-25T15:00:00Z", name, echo(v))
			}
			*t = parsed
		}
	}
	if v := q.Get("before_id"); v != "" {
		if f.Before.IsZero() {
			return f, fail(http.StatusBadRequest, "before_id needs before: the started_at of the call it names (the next page's cursor has both)")
		}
		if len(v) > maxCallID {
			return f, fail(http.StatusBadRequest, "before_id %q: a call id, at most %d bytes", echo(v), maxCallID)
		}
		f.BeforeID = voice.CallID(v)
	}
	for name, p := range map[string]*string{"outcome": &f.Outcome, "carrier": &f.Carrier} {
		v := q.Get(name)
		if !plainName(v) {
			return f, fail(http.StatusBadRequest, "%s %q: a name of letters, digits and _ - . (at most %d)", name, echo(v), maxFilterName)
		}
		*p = v
	}
	for name, p := range map[string]*bool{"live": &f.Live, "broken": &f.Broken} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return f, fail(http.StatusBadRequest, "%s %q: true or false", name, echo(v))
			}
			*p = b
		}
	}
	if len(f.Text) > maxQuery {
		return f, fail(http.StatusBadRequest, "q is %d bytes: at most %d", len(f.Text), maxQuery)
	}
	return f, nil
}

// plainName is an outcome or carrier name as Handset writes them; empty is no filter.
func plainName(v string) bool {
	if len(v) > maxFilterName {
		return false
	}
	for _, r := range v {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// callCursor is where the next page of a call listing starts: pass both as before and
// before_id.
type callCursor struct {
	Before   time.Time    `json:"before"`
	BeforeID voice.CallID `json:"before_id"`
}

// nextPage is the cursor after calls, a page listed with f; nil when it was the last.
func nextPage(f store.ListCalls, calls []store.Call) *callCursor {
	if len(calls) == 0 || len(calls) < store.ListLimit(f.Limit, 50) {
		return nil
	}
	last := calls[len(calls)-1]
	return &callCursor{Before: last.StartedAt, BeforeID: last.ID}
}
