package telnyx

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// Telnyx error codes the client looks for. Codes are strings in Telnyx's answers.
const (
	// CodeCallEnded: "Call has already ended", answered (422) to a command sent to a call
	// that is over, typically because the caller hung up first.
	CodeCallEnded = "90018"
)

// ErrCallEnded matches (errors.Is) the error of a command sent to a call that has already
// ended.
var ErrCallEnded = errors.New("the call has already ended")

// RESTError is Telnyx's JSON error answer: {"errors":[{"code","title","detail"}]}; the
// first error is kept.
type RESTError struct {
	Status int    // HTTP status
	Code   string // Telnyx's error code, like "90018"; empty when the body was not Telnyx's
	Title  string
	Detail string
}

func (e *RESTError) Error() string {
	msg := e.Title
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Code != "" {
		msg = "Telnyx error " + e.Code + ": " + msg
	}
	return msg
}

// Is makes errors.Is(err, ErrCallEnded) true for code 90018.
func (e *RESTError) Is(target error) bool { return target == ErrCallEnded && e.Code == CodeCallEnded }

// restErrorOf reads Telnyx's JSON error body, or describes a body that is not one.
func restErrorOf(status int, data []byte) *RESTError {
	var b struct {
		Errors []struct {
			Code   json.RawMessage `json:"code"`
			Title  string          `json:"title"`
			Detail string          `json:"detail"`
		} `json:"errors"`
	}
	if json.Unmarshal(data, &b) == nil && len(b.Errors) > 0 {
		e := b.Errors[0]
		code := strings.Trim(string(e.Code), `"`) // a string on Telnyx; a number is read too
		if code == "null" {
			code = ""
		}
		return &RESTError{Status: status, Code: voice.Clip(code, 32), Title: voice.Clip(e.Title, 200), Detail: voice.Clip(e.Detail, 400)}
	}
	title := http.StatusText(status)
	if snippet := strings.TrimSpace(string(data)); snippet != "" {
		title += ": " + strings.ToValidUTF8(voice.Clip(strings.Join(strings.Fields(snippet), " "), 200), "?")
	}
	return &RESTError{Status: status, Title: title}
}

// classify attaches the carrier contract's class to a REST error, keeping the
// *voice.ProviderError (and the *RESTError inside it) for errors.As.
func classify(err error) error { return carrier.ClassifyProvider(err, nil) }
