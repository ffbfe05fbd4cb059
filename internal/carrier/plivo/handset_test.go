package plivo_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/plivo"
)

// handset is the test's side of Handset's Plivo routes: it checks every request's V3
// signature, keeps answered calls on the line (streaming, or holding while machine
// detection runs), records the callbacks in the memory and hands transfers to ServeTransfer.
type handset struct {
	t      *testing.T
	token  string
	memory *carriertest.Memory
	base   string // the server's URL, as Plivo signed it
	// transfer serves TransferPath (it checks its own signatures and nonces)
	transfer http.Handler
	// routes, when set, serves every request instead (Handset's own routes under test)
	routes http.Handler

	mu       sync.Mutex
	unsigned int
}

func (h *handset) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.routes != nil {
		h.routes.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == plivo.TransferPath {
		h.transfer.ServeHTTP(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	full := h.base + r.URL.RequestURI()
	if !plivo.ValidSignatureV3(h.token, r.Method, full, r.PostForm, r.Header.Get(plivo.NonceHeader), r.Header.Get(plivo.SignatureHeader)) {
		h.mu.Lock()
		h.unsigned++
		h.mu.Unlock()
		h.t.Errorf("a request to %s is not V3-signed", full)
		http.Error(w, "bad signature", http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/xml")
	switch r.URL.Path {
	case plivo.AnswerPath:
		policy := carrier.MachinePolicy(q.Get(plivo.MachineParam))
		if policy == carrier.MachineHangup || policy == carrier.MachineMessage {
			_, _ = w.Write(plivo.HoldXML(3600))
			return
		}
		doc, err := plivo.StreamXML(plivo.Stream{URL: "wss" + h.base[len("http"):] + plivo.StreamPath, Token: "abc123"})
		if err != nil {
			h.t.Errorf("StreamXML: %v", err)
		}
		_, _ = w.Write(doc)
	case plivo.HangupPath, plivo.MachinePath:
		if err := plivo.ReadCallback(q, r.PostForm).Record(r.Context(), h.memory, time.Now()); err != nil {
			h.t.Errorf("recording a callback: %v", err)
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}
