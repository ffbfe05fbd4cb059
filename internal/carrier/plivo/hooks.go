package plivo

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/mediastream"
)

// HoldSeconds is how long an answered outbound call waits, silent, for its
// machine-detection verdict before Plivo moves on (and, at the document's end, hangs up).
const HoldSeconds = 120

// Hooks serve Plivo's requests about calls, but the media stream itself: the answer URL
// (AnswerPath), call progress (HangupPath: ringing and the end) and machine-detection
// verdicts (MachinePath).
type Hooks struct {
	// Verifier checks every request; its Memory is the calls' memory.
	Verifier Verifier
	// Tokens mint the stream token an answer carries (mediastream.EncodingAlphanumeric:
	// Plivo's extraHeaders allow letters and digits only).
	Tokens *mediastream.Tokens
	// Control hangs up on a machine and starts the stream once a person is heard.
	Control *Control
	// ContentType is the stream's audio (a Content… value); empty is ContentMulaw8k.
	ContentType string
	// Draining says the node takes no new calls.
	Draining func() bool
	// OnProgress is told how the calls Handset placed progress; it must be short.
	OnProgress func(carrier.Progress)
	Log        *slog.Logger
	Now        func() time.Time
}

// Answer serves AnswerPath: the stream document, kept once per call (a repeat gets the
// same answer), or, for an outbound call whose machine policy asks for detection, a
// silent hold until the verdict.
func (h *Hooks) Answer(w http.ResponseWriter, r *http.Request) {
	if err := h.Verifier.Signed(w, r); err != nil {
		h.log().Warn("refused a Plivo answer request", "err", err)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	if h.Draining != nil && h.Draining() {
		// Said in the log, since the refusal reaches only Plivo (which tries the fallback).
		h.log().Info("call refused while draining", "call_uuid", idOrEmpty(r.PostForm.Get("CallUUID")))
		http.Error(w, "draining: try another node", http.StatusServiceUnavailable)
		return
	}
	q := r.URL.Query()
	cb := ReadCallback(q, r.PostForm)
	if cb.Progress.Ref == "" {
		http.Error(w, "no CallUUID", http.StatusBadRequest)
		return
	}
	var body []byte
	switch policy := carrier.MachinePolicy(q.Get(MachineParam)); {
	case cb.Progress.CallID != "" && (policy == carrier.MachineHangup || policy == carrier.MachineMessage):
		body = HoldXML(HoldSeconds)
	default:
		s, err := h.stream(r, cb)
		if err == nil {
			body, err = StreamXML(s)
		}
		if err != nil {
			h.log().Error("cannot answer a Plivo call", "call_uuid", cb.Progress.Ref, "err", err)
			http.Error(w, "cannot answer", http.StatusInternalServerError)
			return
		}
	}
	once := mediastream.Once{Memory: h.Verifier.Memory, Now: h.now, Log: h.log(), RefKey: "call_uuid", ContentType: "application/xml"}
	if once.AnswerOnce(w, r, cb.Progress.Ref, r.Header.Get(NonceHeader), body) && cb.Progress.CallID != "" {
		h.record(r.Context(), cb)
	}
}

// Progress serves HangupPath and MachinePath: the word is merged into the calls' memory
// and told to OnProgress; a verdict then hangs up on a machine (policy hangup) or starts
// the stream.
func (h *Hooks) Progress(w http.ResponseWriter, r *http.Request) {
	if err := h.Verifier.Signed(w, r); err != nil {
		h.log().Warn("refused a Plivo callback", "path", r.URL.Path, "err", err)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	cb := ReadCallback(r.URL.Query(), r.PostForm)
	if cb.Progress.Ref == "" && cb.RequestUUID == "" {
		http.Error(w, "no CallUUID", http.StatusBadRequest)
		return
	}
	if err := h.record(r.Context(), cb); err != nil {
		http.Error(w, "try again later", http.StatusServiceUnavailable)
		return
	}
	p := cb.Progress
	if r.URL.Path == MachinePath && p.AnsweredBy != "" && p.Ref != "" {
		var err error
		if p, err = h.verdict(r, cb); err != nil {
			h.log().Error("acting on a machine-detection verdict failed", "call_uuid", p.Ref, "err", err)
			http.Error(w, "try again later", http.StatusBadGateway)
			return
		}
	}
	if h.OnProgress != nil && p.CallID != "" {
		h.OnProgress(placed(p, cb))
	}
	w.WriteHeader(http.StatusNoContent)
}

// verdict acts on a machine-detection verdict: a machine under policy hangup is hung up
// on (Declined), anything else gets its stream.
func (h *Hooks) verdict(r *http.Request, cb Callback) (carrier.Progress, error) {
	p := cb.Progress
	ctx := r.Context()
	if h.Control == nil {
		return p, errors.New("Plivo is not configured: set PLIVO_AUTH_ID and PLIVO_AUTH_TOKEN")
	}
	if p.AnsweredBy.Machine() && carrier.MachinePolicy(r.URL.Query().Get(MachineParam)) == carrier.MachineHangup {
		// Said before the hang-up: Plivo's hangup callback for it ("completed") can come
		// back before this request returns, and the call must end as declined, not as
		// a call that was talked on.
		declined := carrier.Progress{CallID: p.CallID, Ref: p.Ref, AnsweredBy: p.AnsweredBy, Declined: true}
		if err := h.Verifier.Memory.Progressed(ctx, declined, h.now()); err != nil {
			h.log().Warn("cannot record a declined call", "call_uuid", p.Ref, "err", err)
		}
		if h.OnProgress != nil && declined.CallID != "" {
			h.OnProgress(placed(declined, cb))
		}
		if err := h.Control.REST().HangupCall(ctx, p.Ref); err != nil && !notFound(err) {
			return p, classify(err)
		}
		return declined, nil
	}
	s, err := h.stream(r, cb)
	if err != nil {
		return p, err
	}
	return p, classify(h.Control.REST().StartStream(ctx, p.Ref, s))
}

// stream is the stream of call cb under Handset's public URL, with a fresh token
// carrying what Plivo said of the call.
func (h *Hooks) stream(r *http.Request, cb Callback) (Stream, error) {
	if h.Tokens == nil {
		return Stream{}, errors.New("no stream tokens")
	}
	token, err := h.Tokens.Mint(mediastream.Claims{CallRef: cb.Progress.Ref, From: cb.From, To: cb.To,
		Direction: direction(r.PostForm.Get("Direction")), CallID: string(cb.Progress.CallID),
		AnsweredBy: string(cb.Progress.AnsweredBy), Attestation: string(cb.Attestation)}, h.now())
	if err != nil {
		return Stream{}, err
	}
	base := strings.TrimSuffix(mediastream.PublicURL(r, h.Verifier.PublicURL, h.Verifier.TrustedProxies, false), r.URL.RequestURI())
	ws := strings.Replace(strings.Replace(base, "https://", "wss://", 1), "http://", "ws://", 1)
	return Stream{URL: ws + StreamPath, StatusURL: base + StreamStatusPath, ContentType: h.ContentType, Token: token}, nil
}

func direction(d string) string {
	if d == "outbound" {
		return "outbound"
	}
	return "inbound"
}

// record merges cb into the calls' memory, bounded in time.
func (h *Hooks) record(ctx context.Context, cb Callback) error {
	ctx, cancel := context.WithTimeout(ctx, mediastream.MemoryTimeout)
	defer cancel()
	err := cb.Record(ctx, h.Verifier.Memory, h.now())
	if err != nil {
		h.log().Error("cannot record a Plivo callback", "call_uuid", cb.Progress.Ref, "err", err)
	}
	return err
}

func (h *Hooks) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Hooks) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.New(slog.DiscardHandler)
}

// placed names a call Handset placed by the request id Dial returned, which its record
// and job keep for the call's whole life (Call, Hangup and Transfer resolve it to the
// CallUUID through the ledger); without it, the record's id would change from one name to
// the other as the first callback arrived.
func placed(p carrier.Progress, cb Callback) carrier.Progress {
	if cb.RequestUUID != "" {
		p.Ref = cb.RequestUUID
	}
	return p
}
