package fakeelevenlabs

import (
	"net/http"
	"testing"

	"github.com/handset-voice/handset/internal/audio"
)

// TestLean: a lean fake answers exactly as a normal one, counts every request, and keeps
// none of them.
func TestLean(t *testing.T) {
	for _, lean := range []bool{false, true} {
		s := New(Options{Lean: lean})
		const text = "Hello there."
		ok := post(t, s, streamULaw, "", textBody(text))
		if ok.Code != http.StatusOK || ok.Body.Len() != s.AudioBytes(text, audio.Telephone) {
			t.Fatalf("lean=%t: %d with %d bytes", lean, ok.Code, ok.Body.Len())
		}
		if bad := post(t, s, streamULaw, "", textBody(FailText)); bad.Code != http.StatusInternalServerError {
			t.Fatalf("lean=%t: %s answered %d", lean, FailText, bad.Code)
		}
		wantKept := 2
		if lean {
			wantKept = 0
		}
		s.mu.Lock()
		kept := len(s.requests)
		s.mu.Unlock()
		if kept != wantKept || len(s.Requests()) != wantKept || s.RequestCount() != 2 {
			t.Errorf("lean=%t: kept %d, Requests %d, RequestCount %d; want %d, %d, 2",
				lean, kept, len(s.Requests()), s.RequestCount(), wantKept, wantKept)
		}
	}
}
