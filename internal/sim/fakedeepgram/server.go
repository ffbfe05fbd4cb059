// Package fakedeepgram owns a fake Deepgram live-transcription server for tests, `handset
// simulate` and the load generator. It speaks Deepgram's real streaming wire protocol on
// GET /v1/listen: token auth and JSON handshake errors, raw binary audio in, `Results`,
// `UtteranceEnd`, `SpeechStarted` and `Metadata` messages out, and the `KeepAlive`,
// `Finalize` and `CloseStream` control messages, as described in
// https://developers.deepgram.com/docs/understand-endpointing-interim-results,
// https://developers.deepgram.com/docs/endpointing and
// https://developers.deepgram.com/docs/utterance-end.
//
// Instead of recognising speech it finds utterances by the energy of 20 ms blocks of the
// decoded audio and "transcribes" each one as the next line of a script. A pause shorter
// than EndSilence inside speech stays within one utterance. Stats records each utterance
// (UtteranceStat), so a test can check how much of the caller's speech reached it; a load
// test sets Options.Lean and reads running counts (Totals) instead.
// Everything is measured in audio time, not wall time, so a test that sends a minute of
// audio in one go gets the same messages as a caller speaking in real time. Only the idle
// timeout (NET-0001) runs on the wall clock, as it does at Deepgram.
package fakedeepgram

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Defaults for the zero Options.
const (
	DefaultIdleTimeout  = 10 * time.Second
	DefaultInterimAfter = 300 * time.Millisecond
	DefaultEndSilence   = 600 * time.Millisecond
	DefaultSpeechLevel  = 184 // -45 dBFS: a quiet caller (-34 dBFS active) is heard whole
)

// Options configure a Server. The zero value is a keyless server with an empty script.
type Options struct {
	// Key, when set, is the only credential accepted: the handshake must carry
	// "Authorization: Token <Key>", or it is refused with HTTP 401 as Deepgram does.
	Key string
	// Transcripts is the script: each utterance the fake hears is transcribed as the next
	// line, and "unscripted utterance N" once the script runs out. Connections opened with
	// the same `tag` query value share one position in the script (no tag is one group), so
	// a client that reconnects and replays an utterance gets the same line again: a line is
	// used up only when its final result is sent.
	Transcripts []string
	// IdleTimeout closes a connection with 1011 (NET-0001) when no audio and no text
	// message arrived for this long of wall time. Default 10 s; negative disables it.
	IdleTimeout time.Duration
	// InterimAfter of speech in an utterance brings an interim result (when the client asked
	// for interim_results) with the first half of the line's words. Default 300 ms.
	InterimAfter time.Duration
	// EndSilence of silence after speech ends the utterance with a speech_final result.
	// A shorter pause inside speech does not: the speech after it continues the same
	// utterance, with one transcript, and the pause counts in its UtteranceStat.Speech.
	// Default 600 ms. The client's `endpointing` parameter is checked and recorded but does
	// not change this, so a test controls the fake's timing in one place.
	EndSilence time.Duration
	// SpeechLevel is the RMS (in 16-bit sample units) above which a 20 ms block counts as
	// speech. Default 184 (-45 dBFS), so a quiet phone caller's syllables all count.
	SpeechLevel int
	// DropAfterBytes is a fault: the first connection that has received this many audio
	// bytes is dropped abruptly (no close frame), once. Zero never drops. See DropOnceAfter.
	DropAfterBytes int64
	// Lean keeps no record of connections or utterances, so thousands of connections in a
	// long load test do not grow the server: Stats returns none (so WaitFor sees none),
	// and a connection forgets each utterance once its final result is out. Totals,
	// Connections and Rejected still count everything.
	Lean bool
	// Logger receives a debug line when a connection opens and closes; nil discards.
	Logger *slog.Logger
}

// Totals are running counts over every connection the server has accepted, kept with
// Options.Lean too.
type Totals struct {
	Connections   int   // WebSocket connections accepted
	Open          int   // of those, not yet ended
	Rejected      int   // handshakes refused (bad key, bad parameters)
	AudioBytes    int64 // binary audio received
	Interims      int   // interim results sent
	Finals        int   // final results with a transcript sent
	UtteranceEnds int   // UtteranceEnd messages sent
	Dropped       int   // connections ended by the DropAfterBytes fault or DropAll
	IdleClosed    int   // connections ended by the idle timeout
	Stalled       int   // handshakes held back by Stall
}

// ConnStats is what the fake recorded about one connection.
type ConnStats struct {
	ID            int        // 1-based, in order of arrival
	RequestID     string     // the request_id the fake gave the connection
	Query         url.Values // the handshake's query parameters
	AuthHeader    bool       // the handshake carried an Authorization header
	AudioBytes    int64      // binary audio received
	AudioMessages int        // binary messages received
	KeepAlives    int
	Finalizes     int
	CloseStreams  int
	Interims      []string // interim transcripts sent, in order
	Transcripts   []string // non-empty final transcripts sent, in order
	UtteranceEnd  int      // UtteranceEnd messages sent
	Dropped       bool     // ended by the DropAfterBytes fault or DropAll
	IdleClosed    bool     // ended by the idle timeout
	Closed        bool     // the connection has ended
	// Utterances are the utterances the fake detected, in order, brought up to date after
	// every message it reads and before any result about them is sent; the last may still
	// be open.
	Utterances []UtteranceStat
}

func (c ConnStats) clone() ConnStats {
	c.Query = cloneValues(c.Query)
	c.Interims = slices.Clone(c.Interims)
	c.Transcripts = slices.Clone(c.Transcripts)
	c.Utterances = slices.Clone(c.Utterances)
	return c
}

// How an utterance ended, as UtteranceStat.Final reports it.
const (
	FinalEndpoint = "speech_final" // EndSilence of silence after its last speech
	FinalFinalize = "finalize"     // the client sent Finalize
	FinalClose    = "close"        // the client sent CloseStream
)

// UtteranceStat describes one utterance the fake detected: a run of 20 ms speech blocks
// (RMS at or above SpeechLevel) with no pause of EndSilence or more. Durations are audio
// time, in whole blocks except where a Finalize or CloseStream cut a block short, so a
// test can tell how much of what the caller said reached the fake: an utterance whose
// leading edge was lost starts later and has less Speech.
type UtteranceStat struct {
	// Start is where its first speech block begins, from the start of the connection's
	// audio.
	Start time.Duration
	// Speech spans its speech, from the start of the first speech block to the end of the
	// last, pauses shorter than EndSilence included.
	Speech time.Duration
	// Voiced counts the speech blocks alone: Speech less the pauses inside it.
	Voiced time.Duration
	// Audio is all the audio from the first speech block to the utterance's end: Speech
	// plus the silence that ended it (EndSilence, rounded up to a block), or the audio
	// received up to a Finalize or CloseStream. While it is open, the audio so far.
	Audio time.Duration
	// Text is the script line its final result carried; empty while it is open, and when
	// it had less than 60 ms of speech (a click, which the fake does not transcribe).
	Text string
	// Final is how it ended: FinalEndpoint, FinalFinalize or FinalClose. Empty while it is
	// open, and for good when the connection ended first (dropped, idle, client gone).
	Final string
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// Server is the fake. Mount it with httptest.NewServer (or any mux) and call Close when done.
// Its methods are safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger

	ctx    context.Context // ends every connection when Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per live connection handler

	mu        sync.Mutex
	closed    bool
	conns     []*ConnStats // empty with Options.Lean
	totals    Totals
	script    map[string]int // tag -> index of the next line
	dropAfter int64          // armed fault threshold; 0 = disarmed
	refuse    int            // HTTP status every handshake is refused with; 0: none (Refuse)
	unstall   chan struct{}  // non-nil while handshakes are held; closed to release them (Stall)
	live      map[*ConnStats]context.CancelFunc
	changed   chan struct{} // closed and replaced on an update while watched, for WaitFor
	// watched is set when a WaitFor holds changed: only then is an update announced, so
	// an audio message nobody waits on costs no channel.
	watched bool
}

// New returns a fake server with opts, defaults filled in.
func New(opts Options) *Server {
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.InterimAfter <= 0 {
		opts.InterimAfter = DefaultInterimAfter
	}
	if opts.EndSilence <= 0 {
		opts.EndSilence = DefaultEndSilence
	}
	if opts.SpeechLevel <= 0 {
		opts.SpeechLevel = DefaultSpeechLevel
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		opts:      opts,
		log:       log,
		ctx:       ctx,
		cancel:    cancel,
		script:    map[string]int{},
		dropAfter: opts.DropAfterBytes,
		changed:   make(chan struct{}),
	}
}

// Close ends every open connection and waits for their handlers. Idempotent. Call it after
// the HTTP server's own Close: httptest does not wait for upgraded connections.
func (s *Server) Close() {
	s.update(func() { s.closed = true })
	s.cancel()
	s.wg.Wait()
}

// DropOnceAfter arms the drop fault: the next connection to have received n audio bytes is
// dropped abruptly. n <= 0 disarms it.
func (s *Server) DropOnceAfter(n int64) {
	s.update(func() { s.dropAfter = max(n, 0) })
}

// Connections is how many WebSocket connections the fake has accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals.Connections
}

// Rejected is how many handshakes the fake refused (bad key, bad parameters).
func (s *Server) Rejected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals.Rejected
}

// Totals returns the running counts over every connection so far.
func (s *Server) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals
}

// Stats returns a deep copy of every connection's record, in order of arrival; none with
// Options.Lean.
func (s *Server) Stats() []ConnStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statsLocked()
}

func (s *Server) statsLocked() []ConnStats {
	out := make([]ConnStats, len(s.conns))
	for i, c := range s.conns {
		out[i] = c.clone()
	}
	return out
}

// WaitFor blocks until cond holds for a Stats snapshot or ctx ends; it returns ctx's error
// in the latter case. Tests use it (with a deadline) instead of sleeping.
func (s *Server) WaitFor(ctx context.Context, cond func([]ConnStats) bool) error {
	for {
		s.mu.Lock()
		ok := cond(s.statsLocked())
		ch := s.changed
		s.watched = true
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fakedeepgram: wait: %w", ctx.Err())
		}
	}
}

// update runs f under the lock and wakes WaitFor callers.
func (s *Server) update(f func()) {
	s.mu.Lock()
	f()
	if s.watched {
		close(s.changed)
		s.changed = make(chan struct{})
		s.watched = false
	}
	s.mu.Unlock()
}

// nextLine returns the script line for the next utterance of group tag; take uses it up.
func (s *Server) nextLine(tag string, take bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.script[tag]
	if take {
		s.script[tag] = i + 1
	}
	if i < len(s.opts.Transcripts) {
		return s.opts.Transcripts[i]
	}
	return "unscripted utterance " + strconv.Itoa(i+1)
}

// params are the handshake's parsed query parameters.
type params struct {
	encoding       string
	rate           int
	interim        bool
	vadEvents      bool
	utteranceEndMS int
	model          string
	tag            string
}

func parseParams(q url.Values) (params, error) {
	p := params{encoding: q.Get("encoding"), model: q.Get("model"), tag: q.Get("tag")}
	if p.model == "" {
		p.model = "nova-3"
	}
	switch p.encoding {
	case "mulaw", "alaw", "linear16":
	case "":
		return p, fmt.Errorf("this fake only takes raw audio: the encoding parameter is required")
	default:
		return p, fmt.Errorf("unsupported encoding %q", p.encoding)
	}
	rate, err := strconv.Atoi(q.Get("sample_rate"))
	if err != nil || rate < 50 || rate > 192000 {
		return p, fmt.Errorf("sample_rate must be a positive integer with raw audio, got %q", q.Get("sample_rate"))
	}
	p.rate = rate
	if ch := q.Get("channels"); ch != "" && ch != "1" {
		return p, fmt.Errorf("this fake only takes channels=1, got %q", ch)
	}
	for name, dst := range map[string]*bool{"interim_results": &p.interim, "vad_events": &p.vadEvents} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return p, fmt.Errorf("%s must be true or false, got %q", name, v)
			}
			*dst = b
		}
	}
	for _, name := range []string{"punctuate", "smart_format"} {
		if v := q.Get(name); v != "" {
			if _, err := strconv.ParseBool(v); err != nil {
				return p, fmt.Errorf("%s must be true or false, got %q", name, v)
			}
		}
	}
	if v := q.Get("endpointing"); v != "" && v != "false" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			return p, fmt.Errorf("endpointing must be false or milliseconds, got %q", v)
		}
	}
	if v := q.Get("utterance_end_ms"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return p, fmt.Errorf("utterance_end_ms must be positive milliseconds, got %q", v)
		}
		if !p.interim {
			return p, fmt.Errorf("utterance_end_ms requires interim_results=true")
		}
		p.utteranceEndMS = n
	}
	return p, nil
}

// ServeHTTP answers GET /v1/listen with a WebSocket, as wss://api.deepgram.com does, and
// GET /v1/projects (see projects.go).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/projects" {
		s.projects(w, r)
		return
	}
	requestID := newRequestID()
	if r.URL.Path != "/v1/listen" {
		s.reject(w, http.StatusNotFound, "Not Found", "no route for "+r.URL.Path, requestID)
		return
	}
	if r.Method != http.MethodGet {
		s.reject(w, http.StatusMethodNotAllowed, "Method Not Allowed", "live streaming takes GET with a WebSocket upgrade", requestID)
		return
	}
	if s.fault(w, r, requestID) {
		return
	}
	auth := r.Header.Get("Authorization")
	if s.opts.Key != "" && auth != "Token "+s.opts.Key {
		s.reject(w, http.StatusUnauthorized, "INVALID_AUTH", "Invalid credentials.", requestID)
		return
	}
	p, err := parseParams(r.URL.Query())
	if err != nil {
		s.reject(w, http.StatusBadRequest, "Bad Request", err.Error(), requestID)
		return
	}
	if !isUpgrade(r) {
		s.reject(w, http.StatusUpgradeRequired, "Upgrade Required", "live streaming needs a WebSocket upgrade", requestID)
		return
	}
	// Record the connection before the handshake completes, so it is in Stats by the time
	// the client's dial returns.
	rec := &ConnStats{RequestID: requestID, Query: cloneValues(r.URL.Query()), AuthHeader: auth != ""}
	ctx, cancel := context.WithCancel(s.ctx) // the connection's life; DropAll cancels it
	defer cancel()
	closed := false
	s.update(func() {
		if closed = s.closed; closed {
			return
		}
		s.wg.Add(1) // under the lock, so never concurrent with Close's Wait
		s.totals.Connections++
		s.totals.Open++
		rec.ID = s.totals.Connections
		if !s.opts.Lean {
			s.conns = append(s.conns, rec)
		}
		s.trackLocked(rec, cancel)
	})
	defer s.update(func() { delete(s.live, rec) })
	if closed {
		s.reject(w, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "the fake server is closed", requestID)
		return
	}
	w.Header().Set("dg-request-id", requestID)
	ws, err := websocket.Accept(w, r, nil) // Accept answers a bad handshake itself
	if err != nil {
		s.update(func() { rec.Closed = true; s.totals.Open-- })
		s.wg.Done()
		return
	}
	ws.SetReadLimit(1 << 20)
	defer s.wg.Done()
	s.log.Debug("fakedeepgram: connection opened", "conn", rec.ID, "encoding", p.encoding, "sample_rate", p.rate)
	s.serveConn(ctx, ws, rec, p)
	var st ConnStats
	s.update(func() { rec.Closed = true; s.totals.Open--; st = rec.clone() })
	s.log.Debug("fakedeepgram: connection closed", "conn", st.ID, "audio_bytes", st.AudioBytes,
		"finals", len(st.Transcripts), "dropped", st.Dropped, "idle", st.IdleClosed)
}

func isUpgrade(r *http.Request) bool {
	return headerHas(r.Header, "Connection", "upgrade") && headerHas(r.Header, "Upgrade", "websocket")
}

func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// reject answers a refused handshake with Deepgram's JSON error body.
func (s *Server) reject(w http.ResponseWriter, status int, code, msg, requestID string) {
	s.update(func() { s.totals.Rejected++ })
	body, _ := json.Marshal(errorBody{ErrCode: code, ErrMsg: msg, RequestID: requestID})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("dg-request-id", requestID)
	w.Header().Set("dg-error", msg)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// newRequestID returns a random UUID (version 4) as Deepgram's request ids are.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := fmt.Sprintf("%x", b[:])
	return strings.Join([]string{h[0:8], h[8:12], h[12:16], h[16:20], h[20:32]}, "-")
}
