package bridge

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/handset-voice/handset/internal/voice"
)

// apiError is an error as OpenAI's API answers one, so every OpenAI client shows it as an
// error (with its status, type and code) and never as a reply.
type apiError struct {
	status  int
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// The error types OpenAI's clients know.
const (
	typeInvalidRequest = "invalid_request_error"
	typeAuthentication = "authentication_error"
	typeRateLimit      = "rate_limit_error"
	typeServer         = "server_error"
)

func (e apiError) body() []byte {
	b, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{e})
	return b
}

// write sends e as the whole answer.
func (e apiError) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="handset bridge"`)
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(append(e.body(), '\n'))
}

func invalidRequest(msg, param, code string) apiError {
	e := apiError{status: http.StatusBadRequest, Message: msg, Type: typeInvalidRequest, Code: code}
	if param != "" {
		e.Param = &param
	}
	return e
}

// requestError is the answer to a request the bridge could not read.
func requestError(err error) apiError {
	var bad *errBadRequest
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return apiError{status: http.StatusRequestEntityTooLarge, Message: "the request body is over the bridge's limit", Type: typeInvalidRequest, Code: "request_too_large"}
	case errors.As(err, &bad):
		return invalidRequest(bad.msg, bad.param, "invalid_request")
	}
	return invalidRequest(err.Error(), "", "invalid_request")
}

// runtimeError is the answer to a turn the runtime failed. Its message says what failed
// (the runtime's own words, bounded, are in it); it goes to the client as an error, never
// as text a voice platform would speak.
func runtimeError(err error) apiError {
	msg := "agent runtime: " + voice.Clip(err.Error(), voice.MessageLimit)
	switch voice.KindOf(err) {
	case voice.KindQuota:
		return apiError{status: http.StatusTooManyRequests, Message: msg, Type: typeRateLimit, Code: "runtime_rate_limited"}
	case voice.KindTimeout:
		return apiError{status: http.StatusGatewayTimeout, Message: msg, Type: typeServer, Code: "runtime_timeout"}
	case voice.KindBadInput:
		// the runtime refused what Handset sent it (or its model refused the runtime's):
		// the bridge already checked the client's request, so this is not the client's fault
		return apiError{status: http.StatusBadGateway, Message: msg, Type: typeServer, Code: "runtime_refused"}
	case voice.KindAuth:
		// Handset's credentials for the runtime, not the client's: a server fault
		return apiError{status: http.StatusBadGateway, Message: msg, Type: typeServer, Code: "runtime_auth"}
	}
	return apiError{status: http.StatusBadGateway, Message: msg, Type: typeServer, Code: "runtime_error"}
}
