package fakeopenaispeech

import "net/http"

// DefaultModels are what GET /v1/models lists when Options.Models is empty.
var DefaultModels = []string{"whisper-1", "gpt-4o-mini-transcribe", "tts-1", "gpt-4o-mini-tts"}

// models answers GET /v1/models (https://platform.openai.com/docs/api-reference/models/list):
// the key check OpenAI answers cheapest, which `handset doctor` uses. 401 as checkKey
// decides; otherwise Options.Models (or DefaultModels) as a list.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if status, e, ok := s.checkKey(r); !ok {
		writeError(w, status, e)
		return
	}
	names := s.opts.Models
	if len(names) == 0 {
		names = DefaultModels
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, n := range names {
		list.Data = append(list.Data, model{ID: n, Object: "model", Created: 1700000000, OwnedBy: "system"})
	}
	writeJSON(w, http.StatusOK, list)
}
