package fakeelevenlabs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// voice answers GET /v1/voices/{voice_id} (https://elevenlabs.io/docs/api-reference/voices/get),
// which `handset doctor` uses to check the key and the voice together: 401 invalid_api_key
// without the right xi-api-key, 404 voice_not_found for a voice not in Options.Voices (any
// voice exists when Voices is empty), otherwise the voice's metadata.
func (s *Server) voice(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("voice_id")
	if s.opts.Key != "" && r.Header.Get("xi-api-key") != s.opts.Key {
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
		return
	}
	if len(s.opts.Voices) > 0 && !slices.Contains(s.opts.Voices, id) {
		writeError(w, http.StatusNotFound, "voice_not_found", fmt.Sprintf("A voice with the voice_id %s was not found.", id))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"voice_id": id, "name": "Fake voice " + id, "category": "premade",
		"labels": map[string]string{"accent": "american"}, "available_for_tiers": []string{},
	})
}
