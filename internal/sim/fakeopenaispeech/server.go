package fakeopenaispeech

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/audio"
)

// Magic words, matched as whole words (case-sensitive); see the package comment.
const (
	MagicFail500  = "FAIL500"
	MagicFail400  = "FAIL400"
	MagicFail429  = "FAIL429"
	MagicFailOnce = "FAILONCE"
	MagicSlow     = "SLOW"
	MagicHang     = "HANG"
	MagicStall    = "STALL"
	MagicCutoff   = "CUTOFF"
)

// Defaults and limits.
const (
	// DefaultMsPerChar is how many milliseconds of speech each character of input becomes.
	DefaultMsPerChar = 60
	// DefaultChunk is how much audio each streamed write carries when ChunkBytes is 0.
	DefaultChunk = 100 * time.Millisecond
	// DefaultChunkEvery is the pause between streamed chunks when ChunkEvery is 0.
	DefaultChunkEvery = 10 * time.Millisecond
	// DefaultSlowDelay is the wait SLOW adds before the first byte.
	DefaultSlowDelay = 2 * time.Second
	// PCMRate is the sample rate of response_format "pcm" (and of "wav").
	PCMRate = 24000
	// MaxInputChars is the longest speech input accepted, as OpenAI documents.
	MaxInputChars = 4096
	// MaxFileBytes is the largest upload accepted (OpenAI: 25 MB).
	MaxFileBytes = 25 << 20
	// MinAudio is the shortest upload accepted; OpenAI refuses shorter with audio_too_short.
	MinAudio = 100 * time.Millisecond
)

// PCM is the format of response_format "pcm": 24 kHz 16-bit little-endian mono.
var PCM = audio.Format{Encoding: audio.PCM16, Rate: PCMRate}

// Options configure a Server. The zero value accepts any model and voice and needs no key.
type Options struct {
	// Key, if set, must arrive as "Authorization: Bearer <Key>"; otherwise 401.
	Key string
	// Models, if set, are the only model names accepted (others: 404 model_not_found).
	Models []string
	// Voices, if set, are the only voices accepted (others: 400).
	Voices []string
	// Transcripts is the initial script: each transcription request that passes
	// validation answers the next one. When it runs out, the answer is "".
	Transcripts []string
	// MsPerChar is the speech length per character of input (default DefaultMsPerChar),
	// divided by the request's speed.
	MsPerChar int
	// ChunkBytes is the size of each streamed write (default DefaultChunk of audio). It may
	// be odd, so a sample is split across writes as real servers sometimes do.
	ChunkBytes int
	// ChunkEvery is the pause between streamed chunks (0: DefaultChunkEvery; negative:
	// none).
	ChunkEvery time.Duration
	// FirstByteDelay is the synthesis latency before the speech response headers.
	FirstByteDelay time.Duration
	// TranscribeDelay is the latency before a transcription answer.
	TranscribeDelay time.Duration
	// SlowDelay is the wait SLOW adds (default DefaultSlowDelay).
	SlowDelay time.Duration
	// ToneHz, if positive, makes speech a steady sine at that frequency (peak -3 dBFS)
	// instead of the speech-like signal, so a test can measure it after conversion.
	ToneHz float64
	// KeepAudio records each upload's samples in Upload.Samples.
	KeepAudio bool
	// Logger receives a debug record per request. Nil discards them.
	Logger *slog.Logger
}

// Upload is one recorded transcription request.
type Upload struct {
	KeyPresent     bool // an Authorization header was sent (whatever its value)
	Model          string
	Language       string
	Prompt         string
	ResponseFormat string // as sent ("" when absent: json applies)
	Filename       string
	ContentType    string       // of the file part
	Format         audio.Format // of the WAV file
	Duration       time.Duration
	PeakDBFS       float64 // loudest sample relative to full scale; -Inf for digital silence
	RMSDBFS        float64 // whole-file RMS level (0 dBFS is an RMS of 32768)
	Samples        []int16 // the decoded audio, with Options.KeepAudio
	Text           string  // the text answered
	Status         int     // HTTP status answered; 0 while nothing was sent
	Held           bool    // HANG: the answer is being held back
	Done           bool    // the handler has returned
	Aborted        bool    // the client went away before the answer
}

// Speech is one recorded speech request.
type Speech struct {
	KeyPresent     bool
	Model          string
	Voice          string
	Input          string
	ResponseFormat string
	Speed          float64 // 1 when absent
	Status         int
	Bytes          int  // audio bytes written (WAV header included)
	Held           bool // HANG or STALL: the rest of the answer is being held back
	Done           bool // the handler has returned
	Aborted        bool // the client went away before all the audio was sent
}

// Server is the fake. It is an http.Handler answering /v1/audio/transcriptions and
// /v1/audio/speech (serve it at the root with httptest.NewServer or any http.Server; the
// base URL is then the server's plus "/v1"), or Start serves it on a loopback port.
// Safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux

	quit     chan struct{} // closed by Close: held requests give up
	quitOnce sync.Once

	// Set by Start.
	srv       *http.Server
	url       string
	client    *http.Client
	serveDone chan struct{}

	mu       sync.Mutex // guards the following
	script   []string
	uploads  []*Upload
	speeches []*Speech
	failed   map[string]bool // inputs that already failed once (FAILONCE)
	stopped  bool            // Close ran on a started server: refuse new requests
	active   sync.WaitGroup  // handlers running (counted under mu)
	changed  chan struct{}   // closed and replaced whenever a record changes
}

// New returns a fake server to mount as an http.Handler.
func New(opts Options) *Server {
	if opts.MsPerChar <= 0 {
		opts.MsPerChar = DefaultMsPerChar
	}
	if opts.ChunkEvery == 0 {
		opts.ChunkEvery = DefaultChunkEvery
	}
	if opts.SlowDelay <= 0 {
		opts.SlowDelay = DefaultSlowDelay
	}
	s := &Server{
		opts:    opts,
		log:     opts.Logger,
		mux:     http.NewServeMux(),
		quit:    make(chan struct{}),
		script:  slices.Clone(opts.Transcripts),
		failed:  map[string]bool{},
		changed: make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux.HandleFunc("POST /v1/audio/transcriptions", s.transcribe)
	s.mux.HandleFunc("POST /v1/audio/speech", s.speech)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("/", s.notFound)
	return s
}

// Start returns a fake server listening on a loopback port; use URL as the providers'
// BaseURL and Close when done.
func Start(opts Options) (*Server, error) {
	s := New(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakeopenaispeech: listen: %w", err)
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + ln.Addr().String() + "/v1"
	s.client = &http.Client{Transport: &http.Transport{}}
	s.serveDone = make(chan struct{})
	go func() {
		defer close(s.serveDone)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// URL is the base URL of a started server, "http://127.0.0.1:PORT/v1" ("" unless Start).
func (s *Server) URL() string { return s.url }

// Client returns an HTTP client for a started server whose idle connections Close
// releases (nil unless Start).
func (s *Server) Client() *http.Client { return s.client }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, newError("The fake server is shutting down.", "server_error", "", ""))
		return
	}
	s.active.Add(1)
	s.mu.Unlock()
	defer s.active.Done()
	s.mux.ServeHTTP(w, r)
}

// Close makes every held request (HANG, STALL, SLOW) give up. On a started server it also
// closes the listener and every connection and waits for the handlers to return; a
// handler-only Server keeps answering new requests, which then do not hold. Idempotent.
func (s *Server) Close() {
	s.quitOnce.Do(func() { close(s.quit) })
	if s.srv == nil {
		return
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	_ = s.srv.Close()
	<-s.serveDone
	s.client.CloseIdleConnections()
	s.active.Wait()
}

// Script appends texts to the transcription script.
func (s *Server) Script(texts ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, texts...)
}

// Remaining is how many scripted transcripts have not been used yet.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// Uploads returns a copy of every transcription request received so far, in arrival
// order (including refused ones).
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Upload, len(s.uploads))
	for i, u := range s.uploads {
		out[i] = *u
		out[i].Samples = slices.Clone(u.Samples)
	}
	return out
}

// Speeches returns a copy of every speech request received so far, in arrival order.
func (s *Server) Speeches() []Speech {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Speech, len(s.speeches))
	for i, sp := range s.speeches {
		out[i] = *sp
	}
	return out
}

// WaitFor blocks until cond, given the requests so far (Upload.Samples left out), returns
// true, or ctx ends.
func (s *Server) WaitFor(ctx context.Context, cond func(uploads []Upload, speeches []Speech) bool) error {
	return s.await(ctx, func() bool {
		ups := make([]Upload, len(s.uploads))
		for i, u := range s.uploads {
			ups[i] = *u
			ups[i].Samples = nil
		}
		sps := make([]Speech, len(s.speeches))
		for i, sp := range s.speeches {
			sps[i] = *sp
		}
		return cond(ups, sps)
	})
}

// AwaitUploads blocks until at least n transcription requests have arrived, or ctx ends.
func (s *Server) AwaitUploads(ctx context.Context, n int) error {
	return s.await(ctx, func() bool { return len(s.uploads) >= n })
}

// AwaitUploadsDone blocks until the handlers of at least n transcription requests have
// returned, or ctx ends.
func (s *Server) AwaitUploadsDone(ctx context.Context, n int) error {
	return s.await(ctx, func() bool { return countDone(s.uploads, func(u *Upload) bool { return u.Done }) >= n })
}

// AwaitSpeeches blocks until at least n speech requests have arrived, or ctx ends.
func (s *Server) AwaitSpeeches(ctx context.Context, n int) error {
	return s.await(ctx, func() bool { return len(s.speeches) >= n })
}

// AwaitSpeechesDone blocks until the handlers of at least n speech requests have returned,
// or ctx ends.
func (s *Server) AwaitSpeechesDone(ctx context.Context, n int) error {
	return s.await(ctx, func() bool { return countDone(s.speeches, func(sp *Speech) bool { return sp.Done }) >= n })
}

func countDone[T any](recs []*T, done func(*T) bool) int {
	n := 0
	for _, r := range recs {
		if done(r) {
			n++
		}
	}
	return n
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

// update changes records under the lock and wakes waiters.
func (s *Server) update(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
	close(s.changed)
	s.changed = make(chan struct{})
}

// AudioDuration is how long the speech for input lasts at speed 1.
func (s *Server) AudioDuration(input string) time.Duration {
	return s.duration(input, 1)
}

// AudioBytes is the exact size of the "pcm" answer for input at speed 1.
func (s *Server) AudioBytes(input string) int { return PCM.Bytes(s.AudioDuration(input)) }

func (s *Server) duration(input string, speed float64) time.Duration {
	d := time.Duration(utf8.RuneCountInString(input)) * time.Duration(s.opts.MsPerChar) * time.Millisecond
	return time.Duration(float64(d) / speed)
}

// next pops the next scripted transcript ("" when the script is exhausted).
func (s *Server) next() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) == 0 {
		return ""
	}
	t := s.script[0]
	s.script = s.script[1:]
	return t
}

// failOnce reports whether a FAILONCE input fails now: only its first request does.
func (s *Server) failOnce(input string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed[input] {
		return false
	}
	s.failed[input] = true
	return true
}

// wait pauses for d. It returns false if the client went away or the server is closing.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.quit:
		return false
	}
}

// hold sends nothing until the client goes away (true) or Close is called (false).
// held is set while it waits.
func (s *Server) hold(r *http.Request, held *bool) (clientGone bool) {
	s.update(func() { *held = true })
	defer s.update(func() { *held = false })
	select {
	case <-r.Context().Done():
		return true
	case <-s.quit:
		return false
	}
}

// magicWords returns the magic words present in text as whole words.
func magicWords(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range words(text) {
		if isMagic(w) {
			out[w] = true
		}
	}
	return out
}

func words(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func isMagic(w string) bool {
	switch w {
	case MagicFail500, MagicFail400, MagicFail429, MagicFailOnce, MagicSlow, MagicHang, MagicStall, MagicCutoff:
		return true
	}
	return false
}

// withoutMagic removes the magic words from a scripted transcript and tidies the spaces.
func withoutMagic(text string) string {
	fields := strings.Fields(text)
	kept := fields[:0]
	for _, f := range fields {
		if w := words(f); len(w) == 1 && isMagic(w[0]) && strings.Trim(f, ".,!?;:") == w[0] {
			continue
		}
		kept = append(kept, f)
	}
	return strings.Join(kept, " ")
}

// notFound answers unknown paths as OpenAI does.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, newError(fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "invalid_request_error", "", ""))
}

// checkKey answers 401 and returns false when a key is configured and not presented.
func (s *Server) checkKey(r *http.Request) (int, errorJSON, bool) {
	if s.opts.Key == "" {
		return 0, errorJSON{}, true
	}
	switch got := r.Header.Get("Authorization"); {
	case got == "":
		return http.StatusUnauthorized, newError("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", "invalid_request_error", "", "invalid_api_key"), false
	case got != "Bearer "+s.opts.Key:
		return http.StatusUnauthorized, newError("Incorrect API key provided: "+mask(strings.TrimPrefix(got, "Bearer "))+".", "invalid_request_error", "", "invalid_api_key"), false
	}
	return 0, errorJSON{}, true
}

// checkModel refuses a model outside Options.Models.
func (s *Server) checkModel(model string) (int, errorJSON, bool) {
	if len(s.opts.Models) > 0 && !slices.Contains(s.opts.Models, model) {
		return http.StatusNotFound, newError(fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model), "invalid_request_error", "model", "model_not_found"), false
	}
	return 0, errorJSON{}, true
}

// faultFor returns the error a FAIL magic word asks for, if any.
func faultFor(magic map[string]bool) (int, errorJSON, bool) {
	switch {
	case magic[MagicFail500]:
		return http.StatusInternalServerError, errServer, true
	case magic[MagicFail400]:
		return http.StatusBadRequest, newError("Invalid request: the fake was asked to fail (FAIL400).", "invalid_request_error", "", ""), true
	case magic[MagicFail429]:
		return http.StatusTooManyRequests, newError("Rate limit reached for requests (simulated by FAIL429).", "requests", "", "rate_limit_exceeded"), true
	}
	return 0, errorJSON{}, false
}

// mask shows only the ends of a key, as OpenAI does in its error message.
func mask(key string) string {
	if len(key) <= 8 {
		return "****"
	}
	return key[:3] + "*****" + key[len(key)-4:]
}
