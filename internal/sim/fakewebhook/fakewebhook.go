// Package fakewebhook is a fake webhook agent runtime for tests, simulate and bench: an
// http.Handler that receives the turns Handset's webhook agent POSTs (the schema in package
// internal/agent/webhook) and answers in any of the three answer types, recording each
// request, decoded, so tests can check the schema and that no phone number was sent.
//
// The answer type is Options.Mode unless the caller's text holds a magic word (matched as a
// whole word, case-sensitive): PLAIN, JSON or SSE choose the type; FAIL500 answers HTTP 500;
// SLOW sends the first piece at once and the rest Options.SlowEvery apart; HANG sends
// nothing until the client goes away or the server is closed; BADJSON answers
// application/json that breaks off mid-object. The reply text is
// Options.Reply's, by default "You said: <text>." with the magic words left in.
package fakewebhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Mode is an answer type.
type Mode string

// Answer types.
const (
	ModePlain Mode = "plain" // text/plain, written piece by piece (chunked)
	ModeJSON  Mode = "json"  // application/json {"text": ...}
	ModeSSE   Mode = "sse"   // text/event-stream, one event per piece, then [DONE]
)

// Magic words.
const (
	MagicPlain   = "PLAIN"
	MagicJSON    = "JSON"
	MagicSSE     = "SSE"
	MagicFail500 = "FAIL500"
	MagicSlow    = "SLOW"
	MagicHang    = "HANG"
	MagicBadJSON = "BADJSON"
)

// DefaultSlowEvery is the pause between the pieces of a SLOW reply.
const DefaultSlowEvery = 200 * time.Millisecond

// Options configure a Server. The zero value answers text/plain and needs no key.
type Options struct {
	// Mode is the answer type when no magic word picks one. Default ModePlain.
	Mode Mode
	// Key, when set, must come as "Authorization: Bearer <Key>"; otherwise 401.
	Key string
	// Reply computes the reply text. Default: "You said: <text>."
	Reply func(Request) string
	// JSONField names the JSON answer's field: "text" (default) or "reply".
	JSONField string
	// SSEJSON sends each event's data as {"text": piece} instead of the bare piece.
	SSEJSON bool
	// Hangup adds "hangup": true to JSON answers.
	Hangup bool
	// SlowEvery is the pause between the pieces of a SLOW reply. Default DefaultSlowEvery.
	SlowEvery time.Duration
	// Logger receives a record per request. Nil discards them.
	Logger *slog.Logger
}

// Message is one entry of a request's history.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one POST received, decoded.
type Request struct {
	Header http.Header    `json:"-"`
	Body   []byte         `json:"-"` // the raw body
	Fields map[string]any `json:"-"` // the body decoded generically, to check the schema's keys
	// The schema's fields.
	CallID     string    `json:"call_id"`
	Turn       int       `json:"turn"`
	CallerHash string    `json:"caller_hash"`
	Carrier    string    `json:"carrier"`
	Direction  string    `json:"direction"`
	Text       string    `json:"text"`
	History    []Message `json:"history"`

	Status  int  `json:"-"` // HTTP status answered; 0 while nothing was sent
	Done    bool `json:"-"` // the handler has returned
	Aborted bool `json:"-"` // the client went away before the answer was complete
}

// Server is the fake. Safe for concurrent use.
type Server struct {
	opts Options

	mu      sync.Mutex
	reqs    []*Request
	changed chan struct{} // closed and replaced whenever reqs change

	quit     chan struct{}
	quitOnce sync.Once
}

// New returns a Server; serve it with httptest.NewServer (any path is accepted).
func New(opts Options) *Server {
	if opts.Mode == "" {
		opts.Mode = ModePlain
	}
	if opts.JSONField == "" {
		opts.JSONField = "text"
	}
	if opts.SlowEvery <= 0 {
		opts.SlowEvery = DefaultSlowEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, changed: make(chan struct{}), quit: make(chan struct{})}
}

// Close releases handlers still waiting (HANG, SLOW). Call it before closing the HTTP server.
func (s *Server) Close() { s.quitOnce.Do(func() { close(s.quit) }) }

// Requests returns copies of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = *r
		out[i].History = slices.Clone(r.History)
	}
	return out
}

// AwaitRequests waits until n requests have arrived.
func (s *Server) AwaitRequests(ctx context.Context, n int) error {
	return s.await(ctx, func() bool { return len(s.reqs) >= n })
}

// AwaitAborted waits until n requests were abandoned by the client.
func (s *Server) AwaitAborted(ctx context.Context, n int) error {
	return s.await(ctx, func() bool {
		k := 0
		for _, r := range s.reqs {
			if r.Aborted {
				k++
			}
		}
		return k >= n
	})
}

func (s *Server) await(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fakewebhook: %w", ctx.Err())
		}
	}
}

// update changes a request under the lock and wakes waiters.
func (s *Server) update(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
	close(s.changed)
	s.changed = make(chan struct{})
}

// ServeHTTP answers one turn.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	rec := &Request{Header: r.Header.Clone(), Body: body}
	decodeErr := json.Unmarshal(body, &rec.Fields)
	if decodeErr == nil {
		decodeErr = json.Unmarshal(body, rec)
	}
	s.update(func() { s.reqs = append(s.reqs, rec) })
	status := s.serve(w, r, rec, decodeErr)
	s.update(func() {
		rec.Status, rec.Done = status, true
		if r.Context().Err() != nil {
			rec.Aborted = true
		}
	})
	s.opts.Logger.Debug("fakewebhook turn", "call", rec.CallID, "turn", rec.Turn, "status", status)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, rec *Request, decodeErr error) int {
	switch {
	case s.opts.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.Key:
		http.Error(w, `{"error":"bad key"}`, http.StatusUnauthorized)
		return http.StatusUnauthorized
	case decodeErr != nil:
		http.Error(w, "bad JSON: "+decodeErr.Error(), http.StatusBadRequest)
		return http.StatusBadRequest
	}
	words := magicWords(rec.Text)
	switch {
	case words[MagicFail500]:
		http.Error(w, `{"error":"fake failure, as asked"}`, http.StatusInternalServerError)
		return http.StatusInternalServerError
	case words[MagicHang]:
		s.wait(r, -1)
		return 0
	case words[MagicBadJSON]:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"text": "You said`)
		return http.StatusOK
	}
	mode := s.opts.Mode
	switch {
	case words[MagicPlain]:
		mode = ModePlain
	case words[MagicJSON]:
		mode = ModeJSON
	case words[MagicSSE]:
		mode = ModeSSE
	}
	reply := "You said: " + rec.Text + "."
	if s.opts.Reply != nil {
		reply = s.opts.Reply(*rec)
	}
	pieces := strings.SplitAfter(reply, " ")
	slow := words[MagicSlow]
	switch mode {
	case ModeJSON:
		ans := map[string]any{s.opts.JSONField: reply}
		if s.opts.Hangup {
			ans["hangup"] = true
		}
		w.Header().Set("Content-Type", "application/json")
		if slow && !s.wait(r, s.opts.SlowEvery) {
			return http.StatusOK
		}
		_ = json.NewEncoder(w).Encode(ans)
	case ModeSSE:
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		for i, p := range pieces {
			if i > 0 && slow && !s.wait(r, s.opts.SlowEvery) {
				return http.StatusOK
			}
			data := p
			if s.opts.SSEJSON {
				b, _ := json.Marshal(map[string]string{"text": p})
				data = string(b)
			}
			for _, line := range strings.Split(data, "\n") {
				_, _ = fmt.Fprintf(w, "data: %s\n", line)
			}
			_, _ = io.WriteString(w, "\n")
			flush(w)
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for i, p := range pieces {
			if i > 0 && slow && !s.wait(r, s.opts.SlowEvery) {
				return http.StatusOK
			}
			_, _ = io.WriteString(w, p)
			flush(w)
		}
	}
	return http.StatusOK
}

// wait pauses d (forever when negative); false when the client left or the server closed.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	var after <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-after:
		return true
	case <-r.Context().Done():
	case <-s.quit:
	}
	return false
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// magicWords returns the whole words of text that are magic.
func magicWords(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		switch w {
		case MagicPlain, MagicJSON, MagicSSE, MagicFail500, MagicSlow, MagicHang, MagicBadJSON:
			out[w] = true
		}
	}
	return out
}
