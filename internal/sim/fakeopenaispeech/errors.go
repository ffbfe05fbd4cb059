package fakeopenaispeech

import (
	"encoding/json"
	"net/http"
)

// errorJSON is OpenAI's error envelope: {"error":{"message","type","param","code"}}, with
// param and code null when they do not apply.
type errorJSON struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func newError(message, typ, param, code string) errorJSON {
	var e errorJSON
	e.Error.Message, e.Error.Type = message, typ
	if param != "" {
		e.Error.Param = &param
	}
	if code != "" {
		e.Error.Code = &code
	}
	return e
}

// errServer is the answer to FAIL500, worded after OpenAI's.
var errServer = newError("The server had an error while processing your request. Sorry about that!", "server_error", "", "")

// badRequest is a 400 invalid_request_error about param.
func badRequest(message, param, code string) (int, errorJSON) {
	return http.StatusBadRequest, newError(message, "invalid_request_error", param, code)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, e errorJSON) { writeJSON(w, status, e) }
