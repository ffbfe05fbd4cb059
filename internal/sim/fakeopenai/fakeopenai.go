// Package fakeopenai owns a fake OpenAI-compatible chat-completions server for tests,
// `handset simulate` and the load generator. It speaks the real wire protocol: the same
// paths (POST /v1/chat/completions, GET /v1/models), chat.completion.chunk objects as
// server-sent events ending with "data: [DONE]", non-streaming chat.completion objects, and
// OpenAI's error envelope {"error":{"message","type","param","code"}}, as documented at
// https://platform.openai.com/docs/api-reference/chat/streaming and
// https://platform.openai.com/docs/api-reference/chat/create; events are framed as
// https://html.spec.whatwg.org/multipage/server-sent-events.html describes.
//
// The default reply is deterministic: two sentences built from the last user message
// ("I heard you say: <text>. What else can I do for you?"), streamed a word or two per
// chunk after a role-only chunk. Magic words in the last user message (or in what
// Options.Said picks) script faults:
//
//	SLOW       stream with Options.SlowEvery between chunks
//	LONG       a reply of twelve sentences (for barge-in)
//	STALL      stream the first sentence, then hold until the client goes away
//	HANG       send nothing at all; hold until the client goes away
//	FAIL500    500 server_error before streaming
//	FAIL400    400 invalid_request_error before streaming
//	FAILMID    stream the first sentence, then an in-stream error object, then end
//	CUTOFF     stream the first sentence, then end without finish_reason or [DONE]
//	KEEPALIVE  put a ": keepalive" comment line before every chunk
//
// Token usage is reported as OpenAI does: in every chat.completion, and, when a streamed
// request asks with "stream_options": {"include_usage": true}, in a last chunk with no
// choices before "[DONE]" (every chunk before it carries "usage": null). Prompt tokens are
// the words of the request's messages, completion tokens the words of the reply.
//
// Every chat request is recorded, including whether the client went away before the reply
// was complete (a barge-in that aborted the turn), unless Options.Lean asks for running
// counts alone, as a long load test does.
package fakeopenai

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Magic words, matched as whole words (case-sensitive) in the last user message.
const (
	MagicSlow      = "SLOW"
	MagicLong      = "LONG"
	MagicStall     = "STALL"
	MagicHang      = "HANG"
	MagicFail500   = "FAIL500"
	MagicFail400   = "FAIL400"
	MagicFailMid   = "FAILMID"
	MagicCutoff    = "CUTOFF"
	MagicKeepalive = "KEEPALIVE"
)

// DefaultModel is what GET /v1/models lists when Options.Models is empty.
const DefaultModel = "handset-fake"

// DefaultSlowEvery is the pause between chunks of a SLOW reply.
const DefaultSlowEvery = 300 * time.Millisecond

// Options configure a Server. The zero value accepts any model and no key.
type Options struct {
	// Key, if set, must arrive as "Authorization: Bearer <Key>"; otherwise 401.
	Key string
	// Models, if set, are the only model names accepted (others get 404 model_not_found).
	Models []string
	// Reply, if set, replaces the default reply text (and with it LONG); the fault magic
	// words still apply.
	Reply func(messages []Message) string
	// Said, if set, picks what the user said from a request's messages: the text the magic
	// words are read from and the default reply echoes. Default: the last user message. A
	// client that sends more than the user's words in that message (a note before them)
	// would otherwise script the fake with words the user said turns ago.
	Said func(messages []Message) string
	// ChunkEvery is the pause between streamed chunks. Default 0.
	ChunkEvery time.Duration
	// SlowEvery is the pause between chunks when SLOW is present. Default DefaultSlowEvery.
	SlowEvery time.Duration
	// FirstTokenDelay is a model's time to first token: in a streamed reply the role-only
	// chunk goes out at once, then nothing until FirstTokenDelay has passed, in place of
	// the ChunkEvery (or SlowEvery) pause before the first content chunk (before the
	// finish chunk of an empty reply). A client that goes away meanwhile is recorded as an
	// abort; Close cuts the wait short. Non-streamed replies are not delayed. Default 0:
	// the usual pause.
	FirstTokenDelay time.Duration
	// Lean keeps no record of requests, so a long load test does not grow the server
	// without bound: Requests returns none, while RequestCount, Aborted, AwaitRequests,
	// AwaitDone and AwaitAborted still work from running counts.
	Lean bool
	// Logger receives a debug record per request. Nil discards them.
	Logger *slog.Logger
}

// Message is one entry of a request's messages as the client sent it. Content given as an
// array of parts is recorded as its text parts joined.
type Message struct {
	Role    string
	Content string
}

// Request is one recorded chat-completions request (see Options.Lean).
type Request struct {
	Header   http.Header
	Model    string
	Messages []Message
	Stream   bool
	// IncludeUsage: the request asked for the usage chunk (stream_options.include_usage).
	IncludeUsage bool
	Status       int  // HTTP status answered; 0 while nothing was sent
	Done         bool // the handler has returned
	Aborted      bool // the client went away before the reply was complete
}

// Server is the fake. It is an http.Handler; serve it with httptest.NewServer or any
// http.Server. Safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux

	quit     chan struct{} // closed by Close: held requests give up
	quitOnce sync.Once

	mu      sync.Mutex    // guards the following
	reqs    []*Request    // empty with Options.Lean
	seq     int           // requests received, recorded or not; the last completion id
	done    int           // requests whose handler has returned
	aborted int           // requests the client abandoned
	changed chan struct{} // closed and replaced whenever a record or count changes
}

// New returns a fake server.
func New(opts Options) *Server {
	if opts.SlowEvery <= 0 {
		opts.SlowEvery = DefaultSlowEvery
	}
	s := &Server{
		opts:    opts,
		log:     opts.Logger,
		mux:     http.NewServeMux(),
		quit:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("/", s.notFound)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close makes every held request (HANG, STALL) give up, so an http.Server can shut down.
// The Server still answers new requests, which then do not hold. Idempotent.
func (s *Server) Close() { s.quitOnce.Do(func() { close(s.quit) }) }

// Requests returns a copy of every chat request received so far, in arrival order; none
// with Options.Lean.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = *r
		out[i].Header = r.Header.Clone()
		out[i].Messages = slices.Clone(r.Messages)
	}
	return out
}

// RequestCount returns how many chat requests have arrived, recorded or not.
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// Aborted returns how many requests the client abandoned before the reply was complete.
func (s *Server) Aborted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

// AwaitRequests blocks until at least n chat requests have arrived, or ctx ends.
func (s *Server) AwaitRequests(ctx context.Context, n int) error {
	return s.await(ctx, func() bool { return s.seq >= n })
}

// AwaitDone blocks until the handlers of at least n chat requests have returned, or ctx ends.
func (s *Server) AwaitDone(ctx context.Context, n int) error {
	return s.await(ctx, func() bool { return s.done >= n })
}

// AwaitAborted blocks until at least n requests were abandoned by their client, or ctx ends.
func (s *Server) AwaitAborted(ctx context.Context, n int) error {
	return s.await(ctx, func() bool { return s.aborted >= n })
}

// await waits for cond, evaluated with s.mu held, to become true.
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
			return ctx.Err()
		}
	}
}

// record starts the record of a new request and returns it with the completion id to
// use. With Options.Lean the record is the handler's alone and goes with it.
func (s *Server) record(r *http.Request) (*Request, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := &Request{}
	if !s.opts.Lean {
		rec.Header = r.Header.Clone()
		s.reqs = append(s.reqs, rec)
	}
	s.seq++
	s.notifyLocked()
	return rec, s.seq
}

// finished marks rec's handler as returned.
func (s *Server) finished(rec *Request) {
	s.update(func() {
		rec.Done = true
		s.done++
	})
}

// abandoned marks rec as given up by its client.
func (s *Server) abandoned(rec *Request) {
	s.update(func() {
		if !rec.Aborted {
			rec.Aborted = true
			s.aborted++
		}
	})
}

// update changes a record under the lock and wakes waiters.
func (s *Server) update(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
	s.notifyLocked()
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
