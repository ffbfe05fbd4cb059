// Package httpagent owns the HTTP plumbing every streaming agent runtime shares (openai,
// webhook, hermes): the silence watchdog of a turn's request and the cancel causes that
// tell a silent runtime from a closed stream or a cancelled caller, the reply body whose
// Close aborts the request, sending a request and classifying what comes back into
// *voice.ProviderError kinds (status, Retry-After), header and key checks, and keeping
// URLs that may carry a token out of errors. Its sse package reads server-sent events.
//
// What a runtime sends and how it reads the answer stays in the runtime.
package httpagent

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/handset-voice/handset/internal/voice"
)

// Causes of a turn's request context being cancelled, told apart when a read fails.
var (
	// ErrSilent: the runtime sent nothing for the whole Timeout.
	ErrSilent = errors.New("runtime silent")
	// ErrClosed: the reply stream was closed, or the exchange is over.
	ErrClosed = errors.New("reply stream closed")
)

// Origin names whose errors these are: a runtime and what it was doing.
type Origin struct {
	Provider string // "openai", "webhook", "hermes", …
	Op       string // "chat", "turn", "start run", …
}

// Fail builds the runtime's ProviderError.
func (o Origin) Fail(kind voice.ErrorKind, status int, err error) *voice.ProviderError {
	return &voice.ProviderError{Provider: o.Provider, Op: o.Op, Kind: kind, Status: status, Err: err}
}

// Aborted classifies a transport failure of an exchange watched by w: the silence
// watchdog (timeout), the caller's context (canceled, or timeout at its deadline; its
// cause is kept), a Close (closed true, or the ErrClosed cause: canceled, wrapping
// context.Canceled), or else the network (transient). during, when not empty, says what
// was under way. The URL a *url.Error repeats is dropped: it may carry a token.
func Aborted(o Origin, w *Watch, closed bool, err error, during string) *voice.ProviderError {
	prefix := ""
	if during != "" {
		prefix = during + ": "
	}
	cause := context.Cause(w.ctx)
	switch {
	case errors.Is(cause, ErrSilent):
		return o.Fail(voice.KindTimeout, 0, fmt.Errorf("%sruntime silent for %s", prefix, w.timeout))
	case w.parent.Err() != nil:
		perr := w.parent.Err()
		kind := voice.KindCanceled
		if errors.Is(perr, context.DeadlineExceeded) {
			kind = voice.KindTimeout
		}
		if pc := context.Cause(w.parent); pc != nil && pc != perr {
			return o.Fail(kind, 0, fmt.Errorf("%s%w: %w", prefix, perr, pc))
		}
		return o.Fail(kind, 0, fmt.Errorf("%s%w", prefix, perr))
	case closed || errors.Is(cause, ErrClosed):
		return o.Fail(voice.KindCanceled, 0, fmt.Errorf("%s%w: %w", prefix, context.Canceled, ErrClosed))
	}
	return o.Fail(voice.KindTransient, 0, fmt.Errorf("%s%w", prefix, WithoutURL(err)))
}

// WithoutURL returns err without the URL a *url.Error (what http.Client.Do returns)
// repeats in its message: its query or path may carry a token.
func WithoutURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return fmt.Errorf("%s: %w", uerr.Op, uerr.Err)
	}
	return err
}

// RedactURL drops a URL's user info, query and fragment, which may carry secrets, so the
// rest can be shown in an error or a log.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// ValidURL reports whether raw is an http or https URL with a host.
func ValidURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
