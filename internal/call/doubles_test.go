package call

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

// The engine's test doubles: a caller's audio and VAD, the carrier, recognizers, voices,
// agents and a journal the tests watch.

// Caller audio: a loud frame is speech to the rig's VAD and to its recognizers.
var (
	loudFrame  = bytes.Repeat([]byte{g711.EncodeMulawSample(12000)}, 160)
	quietFrame = bytes.Repeat([]byte{0xff}, 160)
)

// levelVAD hears speech in loud frames; three quiet frames end it.
type levelVAD struct {
	speaking bool
	quiet    int
}

func (v *levelVAD) Process(pcm []int16) vad.Event {
	loud := len(pcm) > 0 && (pcm[0] > 4000 || pcm[0] < -4000)
	switch {
	case loud && !v.speaking:
		v.speaking, v.quiet = true, 0
		return vad.SpeechStart
	case loud:
		v.quiet = 0
	case v.speaking:
		if v.quiet++; v.quiet == 3 {
			v.speaking = false
			return vad.SpeechEnd
		}
	}
	return vad.None
}
func (v *levelVAD) Reset()          { v.speaking, v.quiet = false, 0 }
func (v *levelVAD) InSpeech() bool  { return v.speaking }
func (v *levelVAD) SampleRate() int { return 8000 }

// legPlay says when the carrier returns a mark.
type legPlay uint8

const (
	playAtOnce legPlay = iota // as soon as it is sent
	// playPaced: once the audio before it has played, 20 ms a frame on the call's clock
	// from when it arrived (or from the end of what was playing); a clear returns the marks
	// still waiting at once, as carriers do.
	playPaced
	playNever // never: a carrier that echoes no mark
)

// testLeg is the carrier: it records what the playout sends, with the clock's time, and
// returns marks as its play says. Its caller hangs up when the test says.
type testLeg struct {
	clk    clock.Clock
	play   legPlay
	ready  chan struct{} // closed once Run has the sink
	hungUp chan struct{}

	mu      sync.Mutex
	sink    voice.LegSink
	sent    []sent
	playEnd time.Time     // paced: when the audio sent so far has played
	waiting []waitingMark // paced: marks not yet returned
}

type sent struct {
	at     time.Time
	kind   string // audio, mark, clear
	name   string
	frames int // audio: 20 ms frames in the message
}

type waitingMark struct {
	name  string
	timer clock.Timer
}

// clockedLeg is a testLeg with a send clock of its own (voice.SendClocked), which counts
// the times the call lent it its goroutine.
type clockedLeg struct {
	*testLeg
	kept atomic.Int64
}

func (l *clockedLeg) ObserveSends(func(time.Duration, bool)) {}
func (l *clockedLeg) KeepTime()                              { l.kept.Add(1) }

func newTestLeg(clk clock.Clock, play legPlay) *testLeg {
	return &testLeg{clk: clk, play: play, ready: make(chan struct{}), hungUp: make(chan struct{})}
}

func (l *testLeg) Info() voice.LegInfo {
	return voice.LegInfo{CallID: "c_test", Carrier: "test", Format: audio.Telephone, EchoCancelled: true}
}

func (l *testLeg) Run(ctx context.Context, sink voice.LegSink) error {
	l.mu.Lock()
	l.sink = sink
	l.mu.Unlock()
	close(l.ready)
	select {
	case <-ctx.Done():
	case <-l.hungUp:
	}
	return nil
}

// hangUp is the caller putting the phone down.
func (l *testLeg) hangUp() { close(l.hungUp) }

func (l *testLeg) SendAudio(_ context.Context, b []byte) error {
	n := len(b) / 160
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = append(l.sent, sent{at: l.clk.Now(), kind: "audio", frames: n})
	l.playEnd = later(l.playEnd, l.clk.Now()).Add(time.Duration(n) * audio.FrameDuration)
	return nil
}

func (l *testLeg) SendMark(_ context.Context, name string) error {
	now := l.clk.Now()
	l.mu.Lock()
	l.sent = append(l.sent, sent{at: now, kind: "mark", name: name})
	play, sink := l.play, l.sink
	if play == playPaced && l.playEnd.After(now) {
		t := l.clk.AfterFunc(l.playEnd.Sub(now), func() { sink.Mark(name) })
		l.waiting = append(l.waiting, waitingMark{name: name, timer: t})
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	if play != playNever && sink != nil {
		sink.Mark(name)
	}
	return nil
}

func (l *testLeg) Clear(context.Context) error {
	now := l.clk.Now()
	l.mu.Lock()
	l.sent = append(l.sent, sent{at: now, kind: "clear"})
	l.playEnd = now
	var back []string
	for _, w := range l.waiting {
		if w.timer.Stop() {
			back = append(back, w.name)
		}
	}
	l.waiting = nil
	sink := l.sink
	l.mu.Unlock()
	for _, name := range back {
		sink.Mark(name)
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// count is how many of kind were sent; for audio, how many 20 ms frames.
// firstAudioAfter is when the first audio after the first message of kind (a clear)
// reached the carrier; zero when none has.
func (l *testLeg) firstAudioAfter(kind string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := false
	for _, s := range l.sent {
		switch {
		case s.kind == kind:
			seen = true
		case seen && s.kind == "audio":
			return s.at
		}
	}
	return time.Time{}
}

func (l *testLeg) count(kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.sent {
		switch {
		case s.kind == kind && kind == "audio":
			n += s.frames
		case s.kind == kind:
			n++
		}
	}
	return n
}

// messages is how many audio messages were sent.
func (l *testLeg) messages() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.sent {
		if s.kind == "audio" {
			n++
		}
	}
	return n
}

func (l *testLeg) sentMark(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.sent, func(s sent) bool { return s.kind == "mark" && s.name == name })
}

// record is everything sent so far.
func (l *testLeg) record() []sent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sent)
}

// fakeSTT is a recognizer whose opens the test refuses or holds back.
type fakeSTT struct {
	name string
	clk  clock.Clock
	mu   sync.Mutex
	// refuse fails every open while set; hold makes opens wait until it is closed.
	refuse  error
	hold    chan struct{}
	opens   []time.Time
	streams []*fakeStream
}

func (f *fakeSTT) Name() string { return f.name }

func (f *fakeSTT) Stream(ctx context.Context, _ audio.Format, _ voice.StreamOptions) (voice.RecognizerStream, error) {
	f.mu.Lock()
	f.opens = append(f.opens, f.clk.Now())
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, &voice.ProviderError{Provider: f.name, Op: "open stream", Kind: voice.KindCanceled, Err: ctx.Err()}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return nil, f.refuse
	}
	s := &fakeStream{results: make(chan voice.Transcript, 16)}
	f.streams = append(f.streams, s)
	return s, nil
}

func (f *fakeSTT) set(refuse error) {
	f.mu.Lock()
	f.refuse = refuse
	f.mu.Unlock()
}

func (f *fakeSTT) openTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.opens...)
}

// stream returns the i-th stream opened, or nil.
func (f *fakeSTT) stream(i int) *fakeStream {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < len(f.streams) {
		return f.streams[i]
	}
	return nil
}

func (f *fakeSTT) streamCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.streams)
}

var unavailable = &voice.ProviderError{Provider: "primary", Op: "open stream", Kind: voice.KindTransient, Status: 503,
	Err: errors.New("service unavailable")}

type fakeStream struct {
	mu        sync.Mutex
	loud      int // loud frames heard
	bytes     int
	finalizes int
	closed    bool
	err       error
	results   chan voice.Transcript
	once      sync.Once
}

func (s *fakeStream) Write(p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("closed")
	}
	s.bytes += len(p)
	if bytes.Equal(p, loudFrame) {
		s.loud++
	}
	return nil
}
func (s *fakeStream) Finalize() error {
	s.mu.Lock()
	s.finalizes++
	s.mu.Unlock()
	return nil
}
func (s *fakeStream) Results() <-chan voice.Transcript { return s.results }
func (s *fakeStream) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.err
	s.mu.Unlock()
	s.once.Do(func() { close(s.results) })
	return err
}

// die ends the stream as a provider would after giving up.
func (s *fakeStream) die(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	s.once.Do(func() { close(s.results) })
}

func (s *fakeStream) heard() (loud, finalizes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loud, s.finalizes
}

// fakeTTS speaks every sentence as 200 ms of audio unless how says otherwise.
type fakeTTS struct {
	name string
	clk  clock.Clock
	how  func(text string, try int) ttsMode // try counts this voice's requests for text
	mu   sync.Mutex
	reqs []ttsReq
}

type ttsMode uint8

const (
	speakOK    ttsMode = iota
	speakFail          // an HTTP 500 before any audio
	speakStall         // no audio, ever
	speakCut           // some audio, then the stream breaks
)

type ttsReq struct {
	text string
	at   time.Time
}

const ttsBytes = 1600 // 200 ms of mu-law

func (f *fakeTTS) Name() string { return f.name }

func (f *fakeTTS) Synthesize(ctx context.Context, text string, _ audio.Format) (io.ReadCloser, error) {
	f.mu.Lock()
	try := 0
	for _, r := range f.reqs {
		if r.text == text {
			try++
		}
	}
	f.reqs = append(f.reqs, ttsReq{text: text, at: f.clk.Now()})
	f.mu.Unlock()
	mode := speakOK
	if f.how != nil {
		mode = f.how(text, try)
	}
	switch mode {
	case speakFail:
		return nil, &voice.ProviderError{Provider: f.name, Op: "synthesize", Kind: voice.KindTransient, Status: 500,
			Err: errors.New("internal error")}
	case speakStall:
		<-ctx.Done()
		return nil, &voice.ProviderError{Provider: f.name, Op: "synthesize", Kind: voice.KindOf(ctx.Err()), Err: ctx.Err()}
	case speakCut:
		return &cutReader{left: ttsBytes / 2}, nil
	}
	return io.NopCloser(bytes.NewReader(bytes.Repeat([]byte{0x55}, ttsBytes))), nil
}

func (f *fakeTTS) requests() []ttsReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ttsReq(nil), f.reqs...)
}

func (f *fakeTTS) count(text string) int {
	n := 0
	for _, r := range f.requests() {
		if r.text == text {
			n++
		}
	}
	return n
}

// cutReader gives some audio, then fails as a dropped connection does.
type cutReader struct{ left int }

func (r *cutReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, &voice.ProviderError{Provider: "tts", Op: "read audio", Kind: voice.KindTransient, Err: errors.New("connection reset")}
	}
	n := min(len(p), r.left)
	for i := range p[:n] {
		p[i] = 0x55
	}
	r.left -= n
	return n, nil
}
func (r *cutReader) Close() error { return nil }

// fakeAgent answers each turn with reply(text), the caller's words.
type fakeAgent struct {
	reply func(said string) string
	mu    sync.Mutex
	reqs  []voice.TurnRequest
}

func (a *fakeAgent) Name() string { return "fake" }
func (a *fakeAgent) Reply(_ context.Context, req voice.TurnRequest) (voice.ReplyStream, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	said := req.History[len(req.History)-1].Content
	return &textStream{text: a.reply(said)}, nil
}

func (a *fakeAgent) requests() []voice.TurnRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]voice.TurnRequest(nil), a.reqs...)
}

// pushAgent streams each turn's reply as the test pushes it: each chunk sent on chunks
// reaches the engine as it comes; closing chunks ends the reply. It keeps every turn's
// request and context.
type pushAgent struct {
	chunks chan voice.ReplyChunk
	mu     sync.Mutex
	reqs   []voice.TurnRequest
	ctxs   []context.Context
}

func newPushAgent() *pushAgent { return &pushAgent{chunks: make(chan voice.ReplyChunk, 16)} }

func (a *pushAgent) Name() string { return "push" }

func (a *pushAgent) Reply(ctx context.Context, req voice.TurnRequest) (voice.ReplyStream, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.ctxs = append(a.ctxs, ctx)
	a.mu.Unlock()
	return &pushStream{ctx: ctx, chunks: a.chunks}, nil
}

// say pushes text as the reply's next chunk.
func (a *pushAgent) say(text string) { a.chunks <- voice.ReplyChunk{Text: text} }

func (a *pushAgent) requests() []voice.TurnRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.reqs)
}

func (a *pushAgent) contexts() []context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ctxs)
}

type pushStream struct {
	ctx    context.Context
	chunks chan voice.ReplyChunk
}

func (s *pushStream) Next() (voice.ReplyChunk, error) {
	select {
	case c, ok := <-s.chunks:
		if !ok {
			return voice.ReplyChunk{}, io.EOF
		}
		return c, nil
	case <-s.ctx.Done():
		return voice.ReplyChunk{}, &voice.ProviderError{Provider: "push", Op: "reply", Kind: voice.KindCanceled, Err: s.ctx.Err()}
	}
}
func (s *pushStream) Close() error { return nil }

// scriptedSTT hands the engine the transcripts a test pushes.
type scriptedSTT struct {
	nopProviders
	results chan voice.Transcript
}

func (s *scriptedSTT) Stream(context.Context, audio.Format, voice.StreamOptions) (voice.RecognizerStream, error) {
	return &scriptedStream{results: s.results}, nil
}

type scriptedStream struct {
	nopStream
	results chan voice.Transcript
}

func (s *scriptedStream) Results() <-chan voice.Transcript { return s.results }

// quickTTS synthesises every sentence as 200 ms of silence at once.
type quickTTS struct{ nopProviders }

func (quickTTS) Synthesize(context.Context, string, audio.Format) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(make([]byte, 1600))), nil
}

// busyAgent never finishes a turn: it keeps reporting progress (a tool running) until
// its context ends, as a runtime whose tools emit events forever does.
type busyAgent struct {
	mu    sync.Mutex
	ctxs  []context.Context
	reply string // when set, the turn answers this at once instead
}

func (a *busyAgent) Name() string { return "busy" }

func (a *busyAgent) Reply(ctx context.Context, _ voice.TurnRequest) (voice.ReplyStream, error) {
	a.mu.Lock()
	a.ctxs = append(a.ctxs, ctx)
	a.mu.Unlock()
	if a.reply != "" {
		return &textStream{text: a.reply}, nil
	}
	return &busyStream{ctx: ctx}, nil
}

func (a *busyAgent) turns() []context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ctxs)
}

type busyStream struct {
	ctx   context.Context
	ticks int
}

func (s *busyStream) Next() (voice.ReplyChunk, error) {
	if s.ticks < 3 {
		s.ticks++
		return voice.ReplyChunk{Progress: "web_search"}, nil
	}
	<-s.ctx.Done()
	return voice.ReplyChunk{}, &voice.ProviderError{Provider: "busy", Op: "reply", Kind: voice.KindCanceled, Err: s.ctx.Err()}
}
func (s *busyStream) Close() error { return nil }

type textStream struct{ text string }

func (s *textStream) Next() (voice.ReplyChunk, error) {
	if s.text == "" {
		return voice.ReplyChunk{}, io.EOF
	}
	t := s.text
	s.text = ""
	return voice.ReplyChunk{Text: t}, nil
}
func (s *textStream) Close() error { return nil }

// journalWatch collects a call's journal events and wakes waiters on each.
type journalWatch struct {
	mu      sync.Mutex
	events  []obs.Event
	changed chan struct{}
}

func newJournalWatch(start time.Time) (*journalWatch, *obs.Journal) {
	w := &journalWatch{changed: make(chan struct{})}
	j := obs.NewWriter(io.Discard, start)
	j.Tee(func(e obs.Event) {
		w.mu.Lock()
		w.events = append(w.events, e)
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	})
	return w, j
}

// wait returns the first event that matches, waiting for it up to a safety deadline.
func (w *journalWatch) wait(t *testing.T, what string, match func(obs.Event) bool) obs.Event {
	t.Helper()
	deadline := time.After(30 * time.Second) // a safety net: the wait ends on the event
	for {
		w.mu.Lock()
		for _, e := range w.events {
			if match(e) {
				w.mu.Unlock()
				return e
			}
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %s in the journal: %+v", what, w.all())
		}
	}
}

func (w *journalWatch) all() []obs.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

type nopStream struct{ n int }

func (s *nopStream) Write(b []byte) error             { s.n += len(b); return nil }
func (s *nopStream) Finalize() error                  { return nil }
func (s *nopStream) Results() <-chan voice.Transcript { return nil }
func (s *nopStream) Close() error                     { return nil }

type nopProviders struct{}

func (nopProviders) Name() string { return "nop" }
func (nopProviders) Stream(context.Context, audio.Format, voice.StreamOptions) (voice.RecognizerStream, error) {
	return &nopStream{}, nil
}
func (nopProviders) Synthesize(context.Context, string, audio.Format) (io.ReadCloser, error) {
	return nil, io.EOF
}
func (nopProviders) Reply(context.Context, voice.TurnRequest) (voice.ReplyStream, error) {
	return nil, io.EOF
}
