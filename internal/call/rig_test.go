package call

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// An engine rig: a call on a fake clock with a carrier that plays at once, a caller the
// test speaks for, and recognizers, voices and an agent the test scripts.

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

// testLeg plays instantly: each mark comes back as soon as it is sent.
type testLeg struct {
	ready chan struct{}
	mu    sync.Mutex
	sink  voice.LegSink
	marks []string
}

func newTestLeg() *testLeg { return &testLeg{ready: make(chan struct{})} }

func (l *testLeg) Info() voice.LegInfo {
	return voice.LegInfo{CallID: "c_test", Carrier: "test", Format: audio.Telephone, EchoCancelled: true}
}
func (l *testLeg) Run(ctx context.Context, sink voice.LegSink) error {
	l.mu.Lock()
	l.sink = sink
	l.mu.Unlock()
	close(l.ready)
	<-ctx.Done()
	return nil
}
func (l *testLeg) SendAudio(context.Context, []byte) error { return nil }
func (l *testLeg) SendMark(_ context.Context, name string) error {
	l.mu.Lock()
	l.marks = append(l.marks, name)
	sink := l.sink
	l.mu.Unlock()
	sink.Mark(name)
	return nil
}
func (l *testLeg) Clear(context.Context) error { return nil }

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
	return &textReply{text: a.reply(said)}, nil
}

func (a *fakeAgent) requests() []voice.TurnRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]voice.TurnRequest(nil), a.reqs...)
}

type textReply struct{ text string }

func (r *textReply) Next() (voice.ReplyChunk, error) {
	if r.text == "" {
		return voice.ReplyChunk{}, io.EOF
	}
	t := r.text
	r.text = ""
	return voice.ReplyChunk{Text: t}, nil
}
func (r *textReply) Close() error { return nil }

// rig runs one call.
type rig struct {
	t     *testing.T
	clk   *clock.Fake
	leg   *testLeg
	c     *Call
	ended chan voice.EndReason
	stt   *fakeSTT // the recognizer, where a test speaks through one

	mu     sync.Mutex
	events []obs.Event
	lines  []store.TranscriptLine
}

// testConfig is a quick call: no greeting, short grace periods.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Turn.TailGrace = 100 * time.Millisecond
	cfg.Turn.BargeInGate = 100 * time.Millisecond
	cfg.Turn.ErrorMessage = "Sorry, something went wrong."
	cfg.Turn.STTErrorMessage = "Sorry, I'm having trouble hearing you. One moment."
	cfg.Turn.SilenceHangup = 30 * time.Second
	cfg.EchoOff = true
	return cfg
}

// startRig starts a call on clk with deps (Leg, Clock, NewVAD, Journal and Transcript
// are the rig's).
func startRig(t *testing.T, clk *clock.Fake, cfg Config, deps Deps) *rig {
	t.Helper()
	r := &rig{t: t, clk: clk, leg: newTestLeg(), ended: make(chan voice.EndReason, 1)}
	j := obs.NewWriter(io.Discard, t0)
	j.Tee(func(e obs.Event) {
		r.mu.Lock()
		r.events = append(r.events, e)
		r.mu.Unlock()
	})
	deps.Leg, deps.Clock, deps.Journal = r.leg, r.clk, j
	deps.NewVAD = func(int) (vad.Detector, error) { return &levelVAD{}, nil }
	deps.Transcript = func(l store.TranscriptLine) {
		r.mu.Lock()
		r.lines = append(r.lines, l)
		r.mu.Unlock()
	}
	r.c = New(context.Background(), cfg, deps)
	go func() { r.ended <- r.c.Run() }()
	select {
	case <-r.leg.ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the call never ran its leg")
	}
	t.Cleanup(func() {
		r.c.Hangup()
		<-r.c.Done()
	})
	return r
}

// speak is the caller saying something: loud frames, then enough quiet for the VAD.
func (r *rig) speak(frames int) {
	for range frames {
		r.frame(loudFrame)
	}
	for range 5 {
		r.frame(quietFrame)
	}
}

// frame sends one caller frame and waits until the engine has taken it.
func (r *rig) frame(f []byte) {
	r.leg.sink.Audio(f)
	r.until("the engine takes the frame", false, func() bool { return r.c.inbound.Len() == 0 })
}

// until waits for cond, advancing the fake clock 10 ms at a time when advance is set.
func (r *rig) until(what string, advance bool, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a safety net: the wait ends on cond
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting until %s; journal:\n%s", what, r.journal())
		}
		if advance {
			r.clk.Advance(10 * time.Millisecond)
		}
		time.Sleep(time.Millisecond)
	}
}

// has reports whether the journal holds an event of typ matching ok (nil: any).
func (r *rig) has(typ string, ok func(obs.Event) bool) bool { return len(r.all(typ, ok)) > 0 }

func (r *rig) all(typ string, ok func(obs.Event) bool) []obs.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []obs.Event
	for _, e := range r.events {
		if e.Type == typ && (ok == nil || ok(e)) {
			out = append(out, e)
		}
	}
	return out
}

func (r *rig) journal() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.events {
		fmt.Fprintf(&b, "%6d %-18s turn=%d name=%s text=%q kind=%s reason=%s %s\n", e.MS, e.Type, e.Turn, e.Name, e.Text, e.Kind, e.Reason, e.Message)
	}
	return b.String()
}

func (r *rig) transcript() []store.TranscriptLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]store.TranscriptLine(nil), r.lines...)
}

// end waits for the call to end on its own (advancing the clock) and returns why.
func (r *rig) end() voice.EndReason {
	r.t.Helper()
	var reason voice.EndReason
	r.until("the call ends", true, func() bool {
		select {
		case reason = <-r.ended:
			return true
		default:
			return false
		}
	})
	return reason
}

func withText(text string) func(obs.Event) bool {
	return func(e obs.Event) bool { return e.Text == text }
}

func named(name string) func(obs.Event) bool {
	return func(e obs.Event) bool { return e.Name == name }
}
