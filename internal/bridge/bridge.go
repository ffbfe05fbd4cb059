package bridge

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// Defaults for Options.
const (
	// DefaultKeepalive is the silence after which a stream gets an SSE comment: a tool
	// that runs for a minute must not look like a dead connection to a proxy or client.
	DefaultKeepalive = 5 * time.Second
	// DefaultCommitAfter is how long a streaming answer may wait for the runtime's first
	// text before its 200 is sent. Until then a failure is an HTTP error status; after,
	// it is an error event in the stream. OpenClaw often takes 1-3 s before it even asks
	// its model, so this waits as long as the first keepalive would.
	DefaultCommitAfter = DefaultKeepalive
	// DefaultRate is the turns a minute each token may start (HANDSET_BRIDGE_RATE).
	DefaultRate = 600
	// DefaultMaxTurns is the turns each token may have running at once
	// (HANDSET_BRIDGE_MAX_TURNS).
	DefaultMaxTurns = 200
)

// Observer is told of each turn (Handset's metrics).
type Observer interface {
	// BridgeTurn: outcome is ok, error, stopped or refused; firstText < 0 when no text
	// was written.
	BridgeTurn(outcome string, firstText time.Duration)
}

// Options configure a Handler.
type Options struct {
	// Agent is the runtime every turn goes to. Required.
	Agent voice.Agent
	// Tokens are the bearer tokens clients may present (HANDSET_BRIDGE_TOKEN), each with
	// limits of its own; Token is one more. At least one is required.
	Tokens []string
	Token  string
	// Rate and MaxTurns limit each token: turns started a minute, and turns at once.
	// Zero is the default.
	Rate, MaxTurns int
	// Observer, when set, is told of every turn.
	Observer Observer
	// Vouch, when set, is told of each request that presented one of the tokens, before
	// it is served: the server then stops counting its connection against the cap on
	// one address's connections (edge.Vouch). A voice platform holds a connection per
	// stream, hundreds from a few addresses; its token's own limits govern it.
	Vouch func(*http.Request)
	// CallerHash turns a caller's number (or a session id that is not plain) into
	// Handset's keyed hash of it. Required: no raw number may reach a runtime.
	CallerHash func(string) string
	// Models lists the model ids GET /v1/models answers; nil lists the runtime's name.
	Models func(ctx context.Context) ([]string, error)
	// Keepalive and CommitAfter; zero is the default.
	Keepalive, CommitAfter time.Duration
	// Logger receives a record per turn; nil discards them.
	Logger *slog.Logger
	// DataDir is where each session's journal is kept, as a call's is
	// (<DataDir>/calls/<call id>/events.jsonl); "" keeps none.
	DataDir string
	// Spoken are the words the bridge says itself on a Retell call, as Handset's own
	// calls do.
	Spoken Spoken
}

// Spoken are the bridge's own words on a Retell call, where it answers for the agent.
type Spoken struct {
	First   string // the begin message (HANDSET_FIRST_MESSAGE); empty: the user speaks first
	Silence string // the answer to Retell's reminder (HANDSET_SILENCE_MESSAGE)
	// Error is said when the runtime fails (HANDSET_ERROR_MESSAGE), never the runtime's
	// own text; empty is DefaultErrorMessage.
	Error string
}

// DefaultErrorMessage is what a Retell caller hears when the runtime fails and no other
// words were set.
const DefaultErrorMessage = "Sorry, I'm having trouble answering right now."

// Handler serves the agent bridge: POST /v1/chat/completions and GET /v1/models, for
// voice platforms that bring their own speech and want a Handset runtime as their LLM.
type Handler struct {
	agent       voice.Agent
	tokens      []clientToken
	observe     Observer
	hash        func(string) string
	vouch       func(*http.Request)
	models      func(ctx context.Context) ([]string, error)
	keepalive   time.Duration
	commitAfter time.Duration
	log         *slog.Logger
	sessions    *sessions
	spoken      Spoken
}

// New checks opts and returns a Handler.
func New(opts Options) (*Handler, error) {
	switch {
	case opts.Agent == nil:
		return nil, errors.New("bridge: no agent runtime")
	case len(opts.Tokens) == 0 && opts.Token == "":
		return nil, errors.New("bridge: no token (HANDSET_BRIDGE_TOKEN)")
	case opts.CallerHash == nil:
		return nil, errors.New("bridge: no caller hash")
	}
	h := &Handler{agent: opts.Agent, hash: opts.CallerHash, observe: opts.Observer,
		vouch: opts.Vouch, models: opts.Models, keepalive: opts.Keepalive, commitAfter: opts.CommitAfter, log: opts.Logger,
		sessions: newSessions(opts.DataDir, opts.Agent.Name()), spoken: opts.Spoken}
	h.spoken.Error = cmp.Or(h.spoken.Error, DefaultErrorMessage)
	rate, most := cmp.Or(opts.Rate, DefaultRate), cmp.Or(opts.MaxTurns, DefaultMaxTurns)
	if opts.Token != "" {
		opts.Tokens = append(slices.Clip(opts.Tokens), opts.Token)
	}
	for i, t := range opts.Tokens {
		if t == "" {
			return nil, fmt.Errorf("bridge: token %d is empty", i+1)
		}
		h.tokens = append(h.tokens, clientToken{sum: sha256.Sum256([]byte(t)), limit: newLimiter(rate, most)})
	}
	if h.keepalive <= 0 {
		h.keepalive = DefaultKeepalive
	}
	if h.commitAfter <= 0 {
		h.commitAfter = DefaultCommitAfter
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.models == nil {
		name := opts.Agent.Name()
		h.models = func(context.Context) ([]string, error) { return []string{name}, nil }
	}
	return h, nil
}

// Close lets go of every session the bridge remembers and closes their journals; turns
// still running journal nothing more. The server calls it once it has stopped serving.
func (h *Handler) Close() { h.sessions.close() }

// clientToken is one token a client may present, kept as its hash, and its limits.
type clientToken struct {
	sum   [sha256.Size]byte
	limit *limiter
}

// Register mounts the bridge's routes on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.Handle("POST /v1/chat/completions", h.authed(h.limited(h.completions)))
	mux.Handle("GET /v1/models", h.authed(func(w http.ResponseWriter, r *http.Request, _ *clientToken) { h.listModels(w, r) }))
	mux.HandleFunc("GET /v1/retell/{token}/{call_id}", h.retell)
}

// authed lets through requests that present one of the bridge's tokens, telling next which.
func (h *Handler) authed(next func(http.ResponseWriter, *http.Request, *clientToken)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		match := h.match(got)
		if match == nil || !ok {
			apiError{status: http.StatusUnauthorized, Type: typeAuthentication, Code: "invalid_api_key",
				Message: "the bridge wants its token: Authorization: Bearer <HANDSET_BRIDGE_TOKEN>"}.write(w)
			return
		}
		if h.vouch != nil {
			h.vouch(r)
		}
		next(w, r, match)
	})
}

// match is the bridge's token that presented is, or nil. Every token is compared, so the
// time taken says nothing of which matched.
func (h *Handler) match(presented string) *clientToken {
	presented = strings.TrimSpace(presented)
	if presented == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(presented))
	var match *clientToken
	for i := range h.tokens {
		if subtle.ConstantTimeCompare(sum[:], h.tokens[i].sum[:]) == 1 {
			match = &h.tokens[i]
		}
	}
	return match
}

// limited lets a turn start within its token's limits, or answers 429 with when to ask
// again.
func (h *Handler) limited(next http.HandlerFunc) func(http.ResponseWriter, *http.Request, *clientToken) {
	return func(w http.ResponseWriter, r *http.Request, t *clientToken) {
		release, retry := t.limit.start(time.Now())
		if release == nil {
			h.observed("refused", -1)
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(retry.Seconds())))))
			apiError{status: http.StatusTooManyRequests, Type: typeRateLimit, Code: "rate_limit_exceeded",
				Message: "over the bridge's limit for this token (HANDSET_BRIDGE_RATE turns a minute, HANDSET_BRIDGE_MAX_TURNS at once)"}.write(w)
			return
		}
		defer release()
		next(w, r)
	}
}

func (h *Handler) observed(outcome string, firstText time.Duration) {
	if h.observe != nil {
		h.observe.BridgeTurn(outcome, firstText)
	}
}

// listModels answers GET /v1/models.
func (h *Handler) listModels(w http.ResponseWriter, r *http.Request) {
	ids, err := h.models(r.Context())
	if err != nil {
		runtimeError(err).write(w)
		return
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
	}{Object: "list", Data: []model{}}
	for _, id := range ids {
		list.Data = append(list.Data, model{ID: id, Object: "model", OwnedBy: "handset"})
	}
	writeJSON(w, http.StatusOK, list)
}

// completions answers POST /v1/chat/completions: one turn of the runtime, streamed as
// OpenAI's chunks or answered whole. The client going away cancels the turn, and the
// runtime's run with it.
func (h *Handler) completions(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	req, t, err := readTurn(w, r)
	if err != nil {
		h.observed("refused", -1)
		requestError(err).write(w)
		return
	}
	h.answer(w, r, req, t, arrived)
}

// readTurn reads and checks a request's body.
func readTurn(w http.ResponseWriter, r *http.Request) (chatRequest, turn, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return chatRequest{}, turn{}, err
	}
	req, err := parseChat(body)
	if err != nil {
		return req, turn{}, err
	}
	t, err := req.turn()
	return req, t, err
}

// answer runs a request's turn.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, req chatRequest, t turn, arrived time.Time) {
	id := identify(r, req, h.hash)
	log := h.log.With("call", id.callID, "session_from", id.source, "stream", req.Stream)
	if t.omitted.any() {
		log.Info("bridge: content omitted", "other_roles", t.omitted.roles, "other_parts", t.omitted.parts, "empty", t.omitted.empty)
	}
	model := cmp.Or(req.Model, h.agent.Name())
	out := newAnswer(w, model, req.Stream, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	ctx := session.WithInstructions(r.Context(), t.instructions)
	h.runTurn(ctx, id.context(h.hash), id.source != "none", t.history, arrived, out, log)
}

// runTurn runs one turn of the runtime for any of the bridge's doors: it files the turn
// in its session (what the runtime missed told, the turn journalled), relays the reply
// into out and ends it there, and counts and logs how it went. keep is false for a
// conversation of one request: a runtime that keeps conversations itself has never seen
// its earlier messages, so they go as what it missed. ctx ending (the client left, or
// asked for something newer) stops the turn and the runtime's run.
func (h *Handler) runTurn(ctx context.Context, sc session.Context, keep bool, history []voice.Message, arrived time.Time, out sink, log *slog.Logger) {
	ctx = session.With(ctx, sc)
	req := voice.TurnRequest{CallID: sc.CallID, Turn: userTurns(history), History: history, CallerHash: sc.CallerHash}
	log = log.With("turn", req.Turn)
	conv := h.sessions.open(sc, keep, arrived)
	defer func() { h.sessions.done(conv, time.Now()) }()
	req.Unseen = conv.begin(req.Turn, history, arrived)
	switch {
	case !keep:
		req.Unseen = history[:len(history)-1]
	case len(req.Unseen) > 0:
		log.Info("bridge: the runtime is told what it missed", "messages", len(req.Unseen))
	}
	res := &relayed{}
	stream, err := h.agent.Reply(ctx, req)
	if err == nil {
		defer stream.Close()
		res = h.relay(ctx, stream, out, func(at time.Time) { conv.firstText(req.Turn, at) })
	} else {
		res.err = err
	}
	stopped := res.err != nil && ctx.Err() != nil
	conv.end(req.Turn, history[len(history)-1].Content, res.text.String(), res.usage, res.err, stopped, time.Now())
	firstText := time.Duration(-1)
	if !res.firstText.IsZero() {
		firstText = res.firstText.Sub(arrived)
	}
	switch {
	case res.err == nil:
		out.finish(res.usage)
		h.observed("ok", firstText)
		log.Info("bridge turn", "ms", time.Since(arrived).Milliseconds(), "first_text_ms", firstText.Milliseconds(), "chars", res.text.Len())
	case stopped:
		h.observed("stopped", firstText)
		log.Info("bridge turn stopped: its client went away or asked for something newer", "ms", time.Since(arrived).Milliseconds(), "chars", res.text.Len())
	default:
		h.observed("error", firstText)
		log.Warn("bridge turn failed", "err", res.err, "kind", voice.KindOf(res.err), "chars", res.text.Len())
		out.fail(res.err)
	}
}

// sink is where relay writes a reply: an HTTP answer, or a Retell call's socket.
type sink interface {
	text(s string)         // the reply's next text
	keepalive()            // a silence of the keepalive's length: a tool runs
	commit()               // the first text is late: commit to an answer that has begun
	finish(u voice.Usage)  // the reply is complete
	fail(runtimeErr error) // the runtime failed: said the door's way, never its own text
}

// relayed is how a turn's reply went.
type relayed struct {
	err       error
	usage     voice.Usage
	text      strings.Builder // what the client was sent, up to voice.TranscriptLimit bytes
	firstText time.Time       // when the first text was written; zero: none was
}

// relay copies the runtime's reply into out until it ends, fails, or ctx ends, with a
// keepalive comment after each silence of h.keepalive; first is told when the first text
// has been written.
//
// The goroutine that reads the runtime's stream writes its text to out itself: handing
// each piece to the request's goroutine first would be one more goroutine to wake, and a
// wake-up on a busy server is the tail of time to first text. The request's goroutine
// keeps the clock (the keepalive, the commit) and ends the turn; mu keeps the two from
// writing at once, and nothing is written once the turn is over.
func (h *Handler) relay(ctx context.Context, stream voice.ReplyStream, out sink, first func(time.Time)) *relayed {
	res := &relayed{}
	var mu sync.Mutex // guards out, res and over while the reader runs
	over := false     // the turn has ended: the reader writes nothing more
	ended := make(chan error, 1)
	wrote := make(chan struct{}, 1) // text went out: the keepalive's silence starts again
	go func() {
		for {
			c, err := stream.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				ended <- err
				return
			}
			mu.Lock()
			if over {
				mu.Unlock()
				return
			}
			if c.Usage.Reported() {
				res.usage = c.Usage
			}
			if c.Text != "" {
				if room := voice.TranscriptLimit - res.text.Len(); room > 0 {
					res.text.WriteString(voice.Clip(c.Text, room))
				}
				out.text(c.Text)
				if res.firstText.IsZero() {
					res.firstText = time.Now()
					first(res.firstText)
				}
				select {
				case wrote <- struct{}{}:
				default:
				}
			}
			mu.Unlock()
		}
	}()
	end := func(err error) *relayed {
		mu.Lock()
		defer mu.Unlock()
		over, res.err = true, err
		return res
	}
	quiet := time.NewTimer(h.keepalive)
	defer quiet.Stop()
	commit := time.NewTimer(h.commitAfter)
	defer commit.Stop()
	for {
		select {
		case <-ctx.Done():
			return end(ctx.Err())
		case err := <-ended:
			return end(err)
		case <-commit.C:
			mu.Lock()
			out.commit()
			mu.Unlock()
		case <-quiet.C:
			mu.Lock()
			out.keepalive()
			mu.Unlock()
			quiet.Reset(h.keepalive)
		case <-wrote:
			quiet.Reset(h.keepalive)
		}
	}
}

// userTurns numbers a turn by the user messages of its conversation.
func userTurns(history []voice.Message) int {
	n := 0
	for _, m := range history {
		if m.Role == voice.RoleUser {
			n++
		}
	}
	return n
}
