package plivo_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/plivo"
)

// ledger is the test's calls' memory: what the callbacks said, by CallUUID and by request
// id; an ended status is never replaced by a live one and a verdict is kept.
type ledger struct {
	mu    sync.Mutex
	calls map[string]*carrier.Progress
}

func newLedger() *ledger { return &ledger{calls: map[string]*carrier.Progress{}} }

func (l *ledger) Lookup(_ context.Context, ref string) (carrier.Progress, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.calls[ref]; p != nil {
		return *p, true, nil
	}
	return carrier.Progress{}, false, nil
}

func (l *ledger) record(cb plivo.Callback) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.calls[cb.Progress.Ref]
	if p == nil && cb.RequestUUID != "" {
		p = l.calls[cb.RequestUUID]
	}
	if p == nil {
		p = &carrier.Progress{}
	}
	in := cb.Progress
	if in.Ref != "" {
		p.Ref = in.Ref
		l.calls[in.Ref] = p
	}
	if cb.RequestUUID != "" {
		l.calls[cb.RequestUUID] = p
	}
	if in.Status != "" && !p.Status.Ended() {
		p.Status = in.Status
	}
	if in.AnsweredBy != "" {
		p.AnsweredBy = in.AnsweredBy
	}
	if in.Duration > 0 {
		p.Duration = in.Duration
	}
}

// handset is the test's side of Handset's Plivo routes: it checks every request's V3
// signature, keeps answered calls on the line (streaming, or holding while machine
// detection runs), feeds the ledger and answers transfers with their <Dial>.
type handset struct {
	t      *testing.T
	token  string
	ledger *ledger
	base   string // the server's URL, as Plivo signed it

	mu       sync.Mutex
	unsigned int
}

func (h *handset) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		h.ledger.record(plivo.ReadCallback(q, r.PostForm))
		w.WriteHeader(http.StatusNoContent)
	case plivo.TransferPath:
		_, _ = w.Write(plivo.DialXML(q.Get(plivo.ToParam), q.Get(plivo.CallerIDParam)))
	default:
		http.NotFound(w, r)
	}
}
