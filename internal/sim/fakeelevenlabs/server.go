// Package fakeelevenlabs is a stand-in for the ElevenLabs text-to-speech HTTP API, shared
// by the tests, `handset simulate` and the load generator. It answers the same URLs,
// headers, query parameters and JSON error bodies as the real service
// (https://elevenlabs.io/docs/api-reference/text-to-speech/stream), and its audio is real
// sound of a predictable length: one tone per word with short silences between words,
// encoded in the requested output_format, so a test can tell speech from silence and
// measure how long it lasts.
//
// Magic text drives faults, in the shapes the real service fails in: "TTSFAIL" anywhere in
// the text fails every request with a 500; "TTSFAILONCE" fails only the first request
// carrying that exact text; "TTSBUSYONCE" answers the first such request 429
// too_many_concurrent_requests; "TTSSTALL" never answers (no headers, no audio) until the
// client gives up; "TTSCUT" streams half the audio and then breaks the connection.
package fakeelevenlabs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/audio"
)

// Defaults.
const (
	// DefaultMsPerChar is how many milliseconds of audio each character of text becomes.
	DefaultMsPerChar = 55
	// MinDuration is the shortest clip the fake returns, however short the text.
	MinDuration = 300 * time.Millisecond
	// DefaultChunk is how much audio each streamed chunk carries when ChunkBytes is 0.
	DefaultChunk = 100 * time.Millisecond
)

// Magic text that makes the fake fail.
const (
	FailText     = "TTSFAIL"     // anywhere in the text: every request answers 500
	FailOnceText = "TTSFAILONCE" // the first request with this exact text answers 500
	BusyOnceText = "TTSBUSYONCE" // the first request with this exact text answers 429
	StallText    = "TTSSTALL"    // no answer at all until the client gives up
	CutText      = "TTSCUT"      // half the audio, then the connection breaks
)

// Options configure a Server. The zero value is a permissive server: no key, any voice.
type Options struct {
	// Key, when set, must arrive in the xi-api-key header; otherwise the answer is 401.
	Key string
	// Voices, when set, lists the voice ids that exist; others answer 404.
	Voices []string
	// MsPerChar is the audio length per character of text (default DefaultMsPerChar).
	// Every clip lasts at least MinDuration.
	MsPerChar int
	// ChunkBytes is the size of each streamed write (default DefaultChunk of audio in the
	// requested format). It is rounded down to whole samples.
	ChunkBytes int
	// ChunkEvery is the pause between streamed chunks (default none).
	ChunkEvery time.Duration
	// FirstByteDelay is the synthesis latency before the response headers and first audio.
	FirstByteDelay time.Duration
	// Lean keeps no record of requests, so a long load test does not grow the server
	// without bound: Requests returns none, RequestCount still counts them.
	Lean bool
	// Logger receives one line per request (nil discards).
	Logger *slog.Logger
}

// Request is what the fake recorded about one request it answered.
type Request struct {
	Voice        string // voice_id from the path
	Model        string // model_id from the body, as sent
	Format       string // output_format query parameter, as sent
	Text         string
	PreviousText string
	NextText     string
	KeyPresent   bool // the xi-api-key header was sent (whatever its value)
	Stream       bool // the /stream endpoint rather than the whole-file one
	Status       int  // HTTP status of the answer, decided before any FirstByteDelay
}

// Server is the fake API. It is an http.Handler; serve it with httptest or net/http.
// Safe for concurrent use.
type Server struct {
	opts    Options
	perChar time.Duration
	log     *slog.Logger
	mux     *http.ServeMux

	mu       sync.Mutex
	requests []Request       // empty with Options.Lean
	count    int             // requests answered, recorded or not
	failed   map[string]bool // texts that already failed once (FailOnceText)
}

// New returns a fake ElevenLabs server.
func New(o Options) *Server {
	if o.MsPerChar <= 0 {
		o.MsPerChar = DefaultMsPerChar
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:    o,
		perChar: time.Duration(o.MsPerChar) * time.Millisecond,
		log:     log,
		mux:     http.NewServeMux(),
		failed:  make(map[string]bool),
	}
	s.mux.HandleFunc("POST /v1/text-to-speech/{voice_id}/stream", func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, true)
	})
	s.mux.HandleFunc("POST /v1/text-to-speech/{voice_id}", func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, false)
	})
	s.mux.HandleFunc("GET /v1/voices/{voice_id}", s.voice)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Requests returns a snapshot of the requests answered so far, oldest first; none with
// Options.Lean.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// RequestCount returns how many synthesis requests have been answered, recorded or not.
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// AudioDuration is how long the audio for text lasts.
func (s *Server) AudioDuration(text string) time.Duration { return duration(text, s.perChar) }

// AudioBytes is the exact size of the audio for text in format f.
func (s *Server) AudioBytes(text string, f audio.Format) int {
	return f.Bytes(s.AudioDuration(text))
}

// outputFormats maps the output_format values the fake can produce to their formats.
var outputFormats = map[string]audio.Format{
	"ulaw_8000": {Encoding: audio.Mulaw, Rate: 8000},
	"alaw_8000": {Encoding: audio.Alaw, Rate: 8000},
	"pcm_8000":  {Encoding: audio.PCM16, Rate: 8000},
	"pcm_16000": {Encoding: audio.PCM16, Rate: 16000},
	"pcm_22050": {Encoding: audio.PCM16, Rate: 22050},
	"pcm_24000": {Encoding: audio.PCM16, Rate: 24000},
	"pcm_32000": {Encoding: audio.PCM16, Rate: 32000},
	"pcm_44100": {Encoding: audio.PCM16, Rate: 44100},
	"pcm_48000": {Encoding: audio.PCM16, Rate: 48000},
}

// contentTypes are the Content-Type headers of the audio answers.
var contentTypes = map[audio.Encoding]string{
	audio.Mulaw: "audio/basic",
	audio.Alaw:  "audio/x-alaw-basic",
	audio.PCM16: "audio/pcm",
}

// body is the JSON request body; fields the fake does not use are accepted and ignored.
type body struct {
	Text         string `json:"text"`
	ModelID      string `json:"model_id"`
	PreviousText string `json:"previous_text"`
	NextText     string `json:"next_text"`
}

// maxBody bounds the request body the fake reads.
const maxBody = 1 << 20

// serve answers one synthesis request.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, stream bool) {
	req := Request{
		Voice:      r.PathValue("voice_id"),
		Stream:     stream,
		KeyPresent: r.Header.Get("xi-api-key") != "",
	}
	req.Format = r.URL.Query().Get("output_format")
	var b body
	bodyErr := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&b)
	req.Model, req.Text, req.PreviousText, req.NextText = b.ModelID, b.Text, b.PreviousText, b.NextText

	f, status, code, msg := s.check(r, req, bodyErr)
	req.Status = status
	stall := status == http.StatusOK && strings.Contains(req.Text, StallText)
	if stall {
		req.Status = 0 // never answered
	}
	s.record(req)
	if stall {
		<-r.Context().Done()
		return
	}
	s.log.Debug("fake elevenlabs request", "voice", req.Voice, "format", req.Format,
		"chars", utf8.RuneCountInString(req.Text), "stream", stream, "status", status)
	if status != http.StatusOK {
		writeError(w, status, code, msg)
		return
	}
	s.speak(w, r, f, req.Text, stream)
}

// check decides the answer to a request, in the order the real API does: credentials,
// voice, parameters, then synthesis. It returns the format to speak for a 200.
func (s *Server) check(r *http.Request, req Request, bodyErr error) (f audio.Format, status int, code, msg string) {
	if s.opts.Key != "" && r.Header.Get("xi-api-key") != s.opts.Key {
		return f, http.StatusUnauthorized, "invalid_api_key", "Invalid API key"
	}
	if len(s.opts.Voices) > 0 && !slices.Contains(s.opts.Voices, req.Voice) {
		return f, http.StatusNotFound, "voice_not_found",
			fmt.Sprintf("A voice with the voice_id %s was not found.", req.Voice)
	}
	f, ok := outputFormats[req.Format]
	switch {
	case ok:
	case req.Format == "":
		return f, http.StatusBadRequest, "invalid_output_format",
			"No output_format given, so the default mp3_44100_128 applies; this fake only produces ulaw_8000, alaw_8000 and pcm_<rate>."
	case strings.HasPrefix(req.Format, "mp3_") || strings.HasPrefix(req.Format, "opus_"):
		return f, http.StatusBadRequest, "invalid_output_format",
			fmt.Sprintf("Output format %s is compressed; this fake only produces ulaw_8000, alaw_8000 and pcm_<rate>.", req.Format)
	default:
		return f, http.StatusBadRequest, "invalid_output_format",
			fmt.Sprintf("Invalid output format %q.", req.Format)
	}
	if bodyErr != nil {
		return f, http.StatusBadRequest, "invalid_request", "The request body is not valid JSON: " + bodyErr.Error()
	}
	if strings.TrimSpace(req.Text) == "" {
		return f, http.StatusBadRequest, "invalid_text", "The text must not be empty."
	}
	if s.once(req.Text, BusyOnceText) {
		return f, http.StatusTooManyRequests, "too_many_concurrent_requests",
			"Too many concurrent requests for your subscription (simulated by " + BusyOnceText + ")."
	}
	if s.fails(req.Text) {
		return f, http.StatusInternalServerError, "internal_error",
			"We are sorry, something went wrong (simulated by " + FailText + ")."
	}
	return f, http.StatusOK, "", ""
}

// fails applies the magic failure texts.
func (s *Server) fails(text string) bool {
	if strings.Contains(text, FailOnceText) {
		return s.once(text, FailOnceText)
	}
	return strings.Contains(text, FailText)
}

// once reports whether text carries magic and is seen with it for the first time.
func (s *Server) once(text, magic string) bool {
	if !strings.Contains(text, magic) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := magic + "\x00" + text
	if s.failed[key] {
		return false
	}
	s.failed[key] = true
	return true
}

func (s *Server) record(req Request) {
	s.mu.Lock()
	s.count++
	if !s.opts.Lean {
		s.requests = append(s.requests, req)
	}
	s.mu.Unlock()
}

// errorBody is the shape of ElevenLabs' error answers: {"detail":{"status":…,"message":…}}.
type errorBody struct {
	Detail struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"detail"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var e errorBody
	e.Detail.Status, e.Detail.Message = code, msg
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(e)
}

// speak writes the audio for text: in chunks with pauses for the streaming endpoint, in one
// piece with a Content-Length for the other. It stops as soon as the client goes away.
func (s *Server) speak(w http.ResponseWriter, r *http.Request, f audio.Format, text string, stream bool) {
	ctx := r.Context()
	sp := newSpeech(text, f, s.AudioDuration(text))
	if !wait(ctx, s.opts.FirstByteDelay) {
		return
	}
	w.Header().Set("Content-Type", contentTypes[f.Encoding])
	if !stream {
		buf := make([]byte, sp.remaining())
		w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
		_, _ = w.Write(sp.next(buf))
		return
	}
	chunk := s.opts.ChunkBytes
	if chunk <= 0 {
		chunk = f.Bytes(DefaultChunk)
	}
	bps := f.Encoding.BytesPerSample()
	buf := make([]byte, max(bps, chunk/bps*bps))
	flusher, _ := w.(http.Flusher)
	w.WriteHeader(http.StatusOK)
	cutAt := -1
	if strings.Contains(text, CutText) {
		cutAt = sp.remaining() / 2
	}
	for first := true; sp.remaining() > 0; first = false {
		if cutAt >= 0 && sp.remaining() <= cutAt {
			panic(http.ErrAbortHandler) // the connection breaks mid-stream
		}
		if !first && !wait(ctx, s.opts.ChunkEvery) {
			return
		}
		if _, err := w.Write(sp.next(buf)); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// wait pauses for d and reports whether ctx is still live.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
