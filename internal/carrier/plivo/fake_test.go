package plivo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/voice"
)

// wait bounds every event-driven wait: generous, since it only matters when a test fails.
const wait = 10 * time.Second

// sink records what a leg delivers and wakes waiters on every change.
type sink struct {
	mu        sync.Mutex
	changed   chan struct{}
	audio     [][]byte
	marks     []string
	digits    []string
	malformed []error
}

func newSink() *sink { return &sink{changed: make(chan struct{}, 1)} }

func (s *sink) record(change func()) {
	s.mu.Lock()
	change()
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *sink) Audio(f []byte) {
	s.record(func() { s.audio = append(s.audio, append([]byte(nil), f...)) })
}
func (s *sink) Mark(name string) {
	s.record(func() { s.marks = append(s.marks, name) })
}
func (s *sink) DTMF(d string)       { s.record(func() { s.digits = append(s.digits, d) }) }
func (s *sink) Malformed(err error) { s.record(func() { s.malformed = append(s.malformed, err) }) }

// waitFor blocks until cond holds (under the sink's lock).
func (s *sink) waitFor(t *testing.T, what string, cond func(*sink) bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		s.mu.Lock()
		ok := cond(s)
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.changed:
		case <-deadline:
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("timed out waiting for %s: audio %d frames, marks %v, digits %v, malformed %v", what, len(s.audio), s.marks, s.digits, s.malformed)
		}
	}
}

// withFake is Handset's Plivo carrier against the fake: its V3-signed requests, the
// answer document it runs, and its simulated caller on the audio stream.
type withFake struct {
	fake   *plivosim.Server
	caller *plivosim.Caller
	legs   chan voice.Leg
	memory *carriertest.Memory
	url    string // Handset's
}

const (
	ourNumber = "+15550002222"
	caller    = "+15550001111"
)

func newWithFake(t *testing.T, codec plivo.Codec, stream plivosim.StreamOptions) *withFake {
	t.Helper()
	f := &withFake{legs: make(chan voice.Leg, 4), memory: carriertest.NewMemory()}
	var handset http.Handler
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handset.ServeHTTP(w, r) }))
	t.Cleanup(hs.Close)
	f.url = hs.URL
	f.caller = plivosim.NewCaller(plivosim.CallerOptions{Stream: stream})
	f.fake = plivosim.New(plivosim.Options{
		Numbers:      []plivosim.Number{{Number: ourNumber, AppID: plivosim.DefaultAppID}},
		Applications: []plivosim.Application{{AppID: plivosim.DefaultAppID, AnswerURL: hs.URL + plivo.AnswerPath, HangupURL: hs.URL + plivo.HangupPath}},
		OpenStream:   f.caller.OpenStream,
	})
	f.caller.Bind(f.fake)
	t.Cleanup(f.fake.Close)
	mux := http.NewServeMux()
	plivo.New(plivo.Options{
		AuthToken: f.fake.AuthToken(), Codec: codec, PublicURL: hs.URL, Memory: f.memory,
		Admit: func(l voice.Leg) (<-chan struct{}, error) {
			f.legs <- l
			return make(chan struct{}), nil
		},
	}).Register(mux)
	handset = mux
	return f
}

// ring places an inbound call and returns the caller's phone and Handset's leg, running.
func (f *withFake) ring(t *testing.T) (*phone.Call, voice.Leg, *sink, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	call, err := f.fake.Ring(ctx, caller, ourNumber)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.caller.Phone(ctx, call.CallUUID)
	if err != nil {
		t.Fatal(err)
	}
	var leg voice.Leg
	select {
	case leg = <-f.legs:
	case <-ctx.Done():
		t.Fatal("no call admitted")
	}
	rec := newSink()
	done := make(chan error, 1)
	go func() { done <- leg.Run(context.Background(), rec) }()
	// The call runs the leg before it sends: its first audio says Run has the sink.
	rec.waitFor(t, "the caller's first audio", func(s *sink) bool { return len(s.audio) > 0 })
	return p, leg, rec, done
}

// ended waits for Run to return and fails on an error.
func ended(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the call did not end")
	}
}

// tone is n bytes of a recognisable mu-law pattern (no silence byte).
func tone(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0x10 + i%0x60)
	}
	return b
}

// receivedSpeech is the caller's audio as Handset received it, without the silence the
// caller streams between utterances.
func receivedSpeech(s *sink) []byte {
	var out []byte
	for _, f := range s.audio {
		for _, b := range f {
			if b != 0xff && b != 0x7f {
				out = append(out, b)
			}
		}
	}
	return out
}
