package fakedeepgram

import (
	"encoding/json"
	"net/http"
)

// ProjectID and ProjectName are the one project GET /v1/projects lists.
const (
	ProjectID   = "3f6b2f0e-0d3c-4a53-9a54-6b3f7c9c2a11"
	ProjectName = "Handset test project"
)

// projects answers GET /v1/projects (https://developers.deepgram.com/reference/manage/projects/list),
// the cheapest authenticated call, which `handset doctor` uses to check a key: "Authorization:
// Token <Key>" or 401 INVALID_AUTH as Deepgram answers.
func (s *Server) projects(w http.ResponseWriter, r *http.Request) {
	requestID := newRequestID()
	write := func(status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("dg-request-id", requestID)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	if r.Method != http.MethodGet {
		write(http.StatusMethodNotAllowed, errorBody{ErrCode: "Method Not Allowed", ErrMsg: "projects are listed with GET", RequestID: requestID})
		return
	}
	if s.opts.Key != "" && r.Header.Get("Authorization") != "Token "+s.opts.Key {
		write(http.StatusUnauthorized, errorBody{ErrCode: "INVALID_AUTH", ErrMsg: "Invalid credentials.", RequestID: requestID})
		return
	}
	type project struct {
		ProjectID string `json:"project_id"`
		Name      string `json:"name"`
	}
	write(http.StatusOK, struct {
		Projects []project `json:"projects"`
	}{[]project{{ProjectID: ProjectID, Name: ProjectName}}})
}
