// Package fakehermes owns a fake of the Hermes Agent API server for tests and simulation.
// It speaks the Hermes API server's wire protocol (its gateway's api_server platform): bearer
// auth with Hermes' 401 envelope, GET /health, GET /v1/models, GET /v1/capabilities,
// POST /v1/chat/completions (streaming with named "hermes.tool.progress" events and
// ": keepalive" comments, and non-streaming), and the native runs API: POST /v1/runs (202),
// GET /v1/runs/{id}, GET /v1/runs/{id}/events (data-only frames whose name is in the JSON
// "event" field, single consumer, ": stream closed" at the end) and POST /v1/runs/{id}/stop
// (stopping, then run.cancelled on the stream; 404 run_not_found once the run is terminal).
//
// The reply is deterministic: two sentences echoing the last user message ("I heard you
// say: <text>. What else can I do for you?"), or Options.Reply's. Magic words in the last
// user message (or in what Options.Said picks from the messages):
//
//	SLOW       pause Options.SlowEvery between text pieces
//	FAIL400    400 invalid_request_error before anything streams
//	FAIL500    500 server_error before anything streams
//	TOOLCALL   a silent tool phase first: tool progress events, then only keepalives for
//	           Options.ToolDuration, then the reply (prefixed "\n\n" as Hermes does);
//	           with HANG the tool never finishes
//	WARNING    a 200 reply whose text is Hermes' fail-open warning, with zero usage
//	ZEROUSAGE  complete with no text and zero usage
//	FAILRUN    the run fails (run.failed, or finish_reason "error" on chat)
//	HANG       send nothing at all, not even keepalives, until the client goes away or
//	           the run is stopped
//	CUTOFF     the reply's text, then the stream ends without its end (no finishing
//	           chunk and [DONE], no run.completed), as a connection lost midway leaves it
//
// A chat completion with X-Hermes-Session-Id is a turn of a session whose transcript the
// server keeps, as Hermes does (sessions.go); Transcript returns it.
//
// Usage is reported where Hermes reports it: "usage" {prompt_tokens, completion_tokens,
// total_tokens} on a chat completion's finishing chunk (or the whole completion), and
// {input_tokens, output_tokens, total_tokens} on run.completed. The fake counts a token a
// word: the words of the messages in, of the reply out.
//
// Every request is recorded (headers, body, messages), and so is every stop and every
// event stream the client abandoned before its run ended.
package fakehermes

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Magic words, matched as whole words (case-sensitive) in the last user message.
const (
	MagicSlow      = "SLOW"
	MagicFail400   = "FAIL400"
	MagicFail500   = "FAIL500"
	MagicToolCall  = "TOOLCALL"
	MagicWarning   = "WARNING"
	MagicZeroUsage = "ZEROUSAGE"
	MagicFailRun   = "FAILRUN"
	MagicHang      = "HANG"
	MagicCutoff    = "CUTOFF"
)

// WarningText is the fail-open answer a WARNING turn gets, shaped like Hermes' own.
const WarningText = "⚠️ Provider authentication failed: the configured provider rejected the API key. Check your provider credentials."

// Defaults for Options.
const (
	DefaultKeepalive    = 30 * time.Second
	DefaultToolDuration = 60 * time.Second
	DefaultSlowEvery    = 300 * time.Millisecond
	DefaultModel        = "hermes-agent"
)

// Options configure a Server.
type Options struct {
	// Key, if set, must arrive as "Authorization: Bearer <Key>"; otherwise 401.
	Key string
	// LegacyAuthError answers 401 with the 0.18.2 body instead of the 0.20+ one.
	LegacyAuthError bool
	// Keepalive is the silence after which a ": keepalive" comment is written. Default 30 s.
	Keepalive time.Duration
	// ToolDuration is how long a TOOLCALL tool runs without text. Default 60 s.
	ToolDuration time.Duration
	// SlowEvery is the pause between text pieces of a SLOW reply. Default 300 ms.
	SlowEvery time.Duration
	// Reply, if set, replaces the default reply text; the magic words still apply.
	Reply func(messages []Message) string
	// Said, if set, picks what the user said from the messages a turn's model is given:
	// the text the magic words are read from and the default reply echoes. Default: the
	// last user message. A client that sends more than the user's words in that message
	// (a note before them) would otherwise script the fake with words said turns ago.
	Said func(messages []Message) string
	// NoRuns makes the server look like a Hermes without the runs API: capabilities say
	// so and the /v1/runs routes answer 404.
	NoRuns bool
	// Logger receives a debug record per request. Nil discards them.
	Logger *slog.Logger
}

// Message is one conversation entry as the client sent it.
type Message struct {
	Role    string
	Content string
}

// Request is one recorded request.
type Request struct {
	Method     string
	Path       string
	Header     http.Header
	Body       string
	SessionID  string    // X-Hermes-Session-Id ("" when absent)
	SessionKey string    // X-Hermes-Session-Key ("" when absent)
	Messages   []Message // chat messages, or a run's instructions + history + input
	RunID      string    // the run a runs request created or addressed
	// Prompt is what the turn's model was given: Messages, or for a chat session the
	// request's system messages, the stored transcript and the request's last message.
	Prompt []Message
}

// Server is the fake; an http.Handler. Safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux

	mu        sync.Mutex
	reqs      []Request
	runs      map[string]*run
	order     []string
	stops     int
	sessions  map[string][]Message // chat session id -> stored transcript
	quit      chan struct{}
	closeOnce sync.Once
}

// run is one started run.
type run struct {
	id        string
	messages  []Message
	status    string // queued, running, stopping, completed, failed, cancelled
	stopped   bool   // POST stop was received while the run was live
	stop      chan struct{}
	consumed  bool          // an event stream was opened
	streaming bool          // the event stream handler is running
	abandoned bool          // the client left the event stream before the run ended
	done      chan struct{} // closed when the event stream handler returns
}

// New returns a fake server.
func New(opts Options) *Server {
	if opts.Keepalive <= 0 {
		opts.Keepalive = DefaultKeepalive
	}
	if opts.ToolDuration <= 0 {
		opts.ToolDuration = DefaultToolDuration
	}
	if opts.SlowEvery <= 0 {
		opts.SlowEvery = DefaultSlowEvery
	}
	s := &Server{opts: opts, log: opts.Logger, mux: http.NewServeMux(), runs: map[string]*run{}, quit: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /v1/health", s.health)
	s.mux.HandleFunc("GET /v1/models", s.auth(s.models))
	s.mux.HandleFunc("GET /v1/capabilities", s.auth(s.capabilities))
	s.mux.HandleFunc("POST /v1/chat/completions", s.auth(s.chat))
	if !opts.NoRuns {
		s.mux.HandleFunc("POST /v1/runs", s.auth(s.startRun))
		s.mux.HandleFunc("GET /v1/runs/{id}", s.auth(s.runStatus))
		s.mux.HandleFunc("GET /v1/runs/{id}/events", s.auth(s.events))
		s.mux.HandleFunc("POST /v1/runs/{id}/stop", s.auth(s.stopRun))
	}
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.log.Debug("fakehermes request", "method", r.Method, "path", r.URL.Path)
	s.mux.ServeHTTP(w, r)
}

// Close makes every held stream (HANG, TOOLCALL) give up. Idempotent.
func (s *Server) Close() { s.closeOnce.Do(func() { close(s.quit) }) }

// Requests returns a copy of every authenticated request so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		r.Header = r.Header.Clone()
		r.Messages = slices.Clone(r.Messages)
		r.Prompt = slices.Clone(r.Prompt)
		out[i] = r
	}
	return out
}

// Runs returns the ids of the runs started so far, in order.
func (s *Server) Runs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

// Stopped reports whether POST /v1/runs/{id}/stop reached the run while it was live.
func (s *Server) Stopped(runID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[runID]
	return r != nil && r.stopped
}

// StopCount is the number of stop requests received (for any run, live or not).
func (s *Server) StopCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stops
}

// Abandoned reports whether the client left the run's event stream before the run ended.
func (s *Server) Abandoned(runID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[runID]
	return r != nil && r.abandoned
}

// StreamDone returns a channel closed once the run's event stream handler has returned
// (nil for an unknown run).
func (s *Server) StreamDone(runID string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[runID]; r != nil {
		return r.done
	}
	return nil
}

// Status returns the run's status ("" for an unknown run).
func (s *Server) Status(runID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[runID]; r != nil {
		return r.status
	}
	return ""
}

func (s *Server) record(r *http.Request, body []byte, msgs []Message, runID string) {
	s.recordPrompt(r, body, msgs, msgs, runID)
}

// recordPrompt records a request whose model was given prompt.
func (s *Server) recordPrompt(r *http.Request, body []byte, msgs, prompt []Message, runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, Request{
		Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(body),
		SessionID: r.Header.Get("X-Hermes-Session-Id"), SessionKey: r.Header.Get("X-Hermes-Session-Key"),
		Messages: msgs, Prompt: prompt, RunID: runID,
	})
}

// lastUser returns the content of the last user message.
func lastUser(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

// magic returns the magic words present in text as whole words.
func magic(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		switch w {
		case MagicSlow, MagicFail400, MagicFail500, MagicToolCall, MagicWarning, MagicZeroUsage, MagicFailRun, MagicHang,
			MagicCutoff:
			out[w] = true
		}
	}
	return out
}

// said is what the user said in msgs: Options.Said's pick, or the last user message.
func (s *Server) said(msgs []Message) string {
	if s.opts.Said != nil {
		return s.opts.Said(msgs)
	}
	return lastUser(msgs)
}

// replyText is the answer to msgs (before WARNING/ZEROUSAGE apply): Options.Reply's, or
// the default echo of what the user said.
func (s *Server) replyText(msgs []Message) string {
	if s.opts.Reply != nil {
		return s.opts.Reply(msgs)
	}
	return echo(s.said(msgs))
}

// ReplyText is the default answer to msgs (before WARNING/ZEROUSAGE apply).
func ReplyText(msgs []Message) string { return echo(lastUser(msgs)) }

// echo is the default reply to text.
func echo(text string) string {
	heard := strings.TrimRight(strings.Join(strings.Fields(text), " "), ".!?… ")
	if heard == "" {
		return "Hello! What can I do for you?"
	}
	return "I heard you say: " + heard + ". What else can I do for you?"
}

// pieces cuts text into words with their trailing spaces; joined they give text back.
func pieces(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		if text[i] == ' ' && (i+1 == len(text) || text[i+1] != ' ') {
			out = append(out, text[start:i+1])
			start = i + 1
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// wait pauses for d while keeping the stream alive; it returns false if the client left,
// the run was stopped or the server closed.
func (s *Server) wait(ctx context.Context, d time.Duration, stop <-chan struct{}, ka *keepalive) bool {
	end := time.Now().Add(d)
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			// A keepalive due before the end goes out first, as it would have in time: a
			// late scheduler must not make a tool longer than Keepalive look silent.
			if ka.due.Before(end) {
				select {
				case <-ka.tick():
					return ka.send()
				default:
				}
			}
			return true
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		case <-s.quit:
			return false
		case <-ka.tick():
			if !ka.send() {
				return false
			}
		}
	}
}
