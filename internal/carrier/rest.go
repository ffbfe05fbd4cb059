package carrier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// APICall sends requests to a carrier's REST API the way every carrier client does: bounded
// in time and size, its failures *voice.ProviderError of the right kind, never quoting the
// request's credentials.
type APICall struct {
	Provider string        // names the carrier in errors ("telnyx")
	Client   *http.Client  // sends the request
	Timeout  time.Duration // bounds the request and the reading of its answer
	Limit    int64         // how much of an answer is read
	// Refusal reads a non-2xx answer's body as the carrier's error.
	Refusal func(status int, body []byte) error
}

// errAPITimeout is the cause of a request cut short by the APICall's own Timeout.
var errAPITimeout = errors.New("request timed out")

// JSON sends req (op names it in errors) and decodes a 2xx JSON answer into out (nil:
// the answer is not read as JSON). A non-2xx answer is a *voice.ProviderError whose
// kind follows the status, wrapping Refusal's error.
func (c APICall) JSON(ctx context.Context, op string, req *http.Request, out any) error {
	fail := func(kind voice.ErrorKind, status int, err error) error {
		return &voice.ProviderError{Provider: c.Provider, Op: op, Kind: kind, Status: status, Err: err}
	}
	rctx, cancel := context.WithTimeoutCause(ctx, c.Timeout, errAPITimeout)
	defer cancel()
	resp, err := c.Client.Do(req.WithContext(rctx))
	var data []byte
	if err == nil {
		defer resp.Body.Close()
		data, err = io.ReadAll(io.LimitReader(resp.Body, c.Limit))
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return fail(voice.KindOf(ctx.Err()), 0, ctx.Err())
		case context.Cause(rctx) == errAPITimeout:
			return fail(voice.KindTimeout, 0, fmt.Errorf("no answer from %s within %v", req.URL.Host, c.Timeout))
		}
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			return fail(voice.KindTimeout, 0, err)
		}
		return fail(voice.KindTransient, 0, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(voice.KindFromStatus(resp.StatusCode), resp.StatusCode, c.Refusal(resp.StatusCode, data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fail(voice.KindProtocol, resp.StatusCode, fmt.Errorf("answer is not the expected JSON: %w", err))
	}
	return nil
}

// ClassifyProvider attaches the contract's class to a carrier client's
// *voice.ProviderError, keeping it for errors.As: 404 is ErrNotFound, an auth kind
// ErrAuth, bad input refused before sending ErrInvalid and by the carrier ErrRejected,
// anything else ErrUnreachable. An error already classified, a cancellation and an error
// that is not a ProviderError stay as they are. notFound, when set, says which other
// errors also mean the thing does not exist.
func ClassifyProvider(err error, notFound func(error) bool) error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		return err // a cancelled context, say: not the carrier's doing
	}
	switch {
	case pe.Status == http.StatusNotFound, notFound != nil && notFound(err):
		return Classify(ErrNotFound, err)
	case pe.Kind == voice.KindAuth:
		return Classify(ErrAuth, err)
	case pe.Kind == voice.KindBadInput && pe.Status == 0:
		return Classify(ErrInvalid, err)
	case pe.Kind == voice.KindBadInput:
		return Classify(ErrRejected, err)
	case pe.Kind == voice.KindCanceled:
		return err
	}
	return Classify(ErrUnreachable, err)
}

// APIRoot is raw, or def when raw is empty, as the root of a carrier's API: an http(s)
// URL with a host and no credentials, query or fragment, without a trailing slash. The
// error names setting (the variable raw came from) and suggests example.
func APIRoot(setting, raw, def, example string) (string, error) {
	root := strings.TrimSpace(raw)
	if root == "" {
		root = def
	}
	u, err := url.Parse(root)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		shown := raw
		if err == nil {
			shown = u.Redacted()
		}
		return "", fmt.Errorf("%s %q is not an http(s) URL without credentials: leave it empty for %s, or set the root of a proxy or fake like %s", setting, shown, def, example)
	}
	return strings.TrimRight(u.String(), "/"), nil
}
