package voice

import (
	"context"
	"errors"
	"fmt"
)

// ErrorKind classifies a provider failure where it happens, so the engine can decide
// (retry, fall back, speak the error message) and doctor can suggest a fix.
type ErrorKind uint8

// Error kinds.
const (
	KindUnknown   ErrorKind = iota
	KindAuth                // credentials missing or rejected (401/403)
	KindQuota               // rate-limited or out of credit (429, 402)
	KindTransient           // 5xx, connection reset: worth one retry
	KindBadInput            // the request was refused as malformed (400, 404, 422)
	KindTimeout             // the provider stayed silent past its deadline
	KindCanceled            // we cancelled it (barge-in, hang-up): not a failure
	KindProtocol            // the provider answered something we cannot read
)

var kindNames = [...]string{"unknown", "auth", "quota", "transient", "bad_input", "timeout", "canceled", "protocol"}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ProviderError is the error every provider returns for a remote failure.
type ProviderError struct {
	Provider string    // "deepgram", "elevenlabs", "openai", …
	Op       string    // what we were doing: "open stream", "synthesize", "chat"
	Kind     ErrorKind // classification
	Status   int       // HTTP status when there was one
	Err      error     // underlying cause
}

func (e *ProviderError) Error() string {
	msg := e.Provider + ": " + e.Op
	if e.Status != 0 {
		msg += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Err != nil {
		// the cause often quotes the provider's answer: bounded, so it cannot flood a log
		msg += ": " + Clip(e.Err.Error(), MessageLimit)
	}
	return msg + " (" + e.Kind.String() + ")"
}

func (e *ProviderError) Unwrap() error { return e.Err }

// Retryable reports whether one more attempt could succeed.
func (e *ProviderError) Retryable() bool {
	return e.Kind == KindTransient || e.Kind == KindTimeout
}

// KindOf returns the classification of err: a ProviderError's kind, KindCanceled for
// context cancellation, KindTimeout for deadlines, otherwise KindUnknown.
func KindOf(err error) ErrorKind {
	var pe *ProviderError
	switch {
	case err == nil:
		return KindUnknown
	case errors.As(err, &pe):
		return pe.Kind
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	}
	return KindUnknown
}

// KindFromStatus classifies an HTTP status code.
func KindFromStatus(status int) ErrorKind {
	switch {
	case status == 401 || status == 403:
		return KindAuth
	case status == 402 || status == 429:
		return KindQuota
	case status == 408 || status == 504:
		return KindTimeout
	case status >= 500:
		return KindTransient
	case status >= 400:
		return KindBadInput
	}
	return KindUnknown
}
