package deepgram_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/stt/deepgram"
	"github.com/handset-voice/handset/internal/voice"
)

const testKey = "dg-test-key"

// speech returns d of speech-like mu-law: a few harmonics under a syllable envelope.
func speech(d time.Duration) []byte {
	f := audio.Telephone
	pcm := make([]int16, f.Bytes(d))
	for i := range pcm {
		t := float64(i) / float64(f.Rate)
		env := 0.35 + 0.65*math.Abs(math.Sin(math.Pi*t/0.18))
		v := 0.5*math.Sin(2*math.Pi*180*t) + 0.3*math.Sin(2*math.Pi*360*t) + 0.2*math.Sin(2*math.Pi*720*t)
		pcm[i] = int16(7000 * env * v)
	}
	return g711.EncodeMulaw(make([]byte, len(pcm)), pcm)
}

// silence returns d of mu-law silence.
func silence(d time.Duration) []byte {
	b := make([]byte, audio.Telephone.Bytes(d))
	for i := range b {
		b[i] = g711.MulawSilence
	}
	return b
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

type harness struct {
	fake *fakedeepgram.Server
	url  string // http:// root, as a user configures it
	rec  *deepgram.Recognizer
}

// newHarness runs a fake behind handler wrap (nil: the fake itself) and a Recognizer on it.
func newHarness(t *testing.T, fo fakedeepgram.Options, do deepgram.Options, wrap func(http.Handler) http.Handler) *harness {
	t.Helper()
	if fo.Key == "" {
		fo.Key = testKey
	}
	fake := fakedeepgram.New(fo)
	var h http.Handler = fake
	if wrap != nil {
		h = wrap(fake)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		fake.Close()
	})
	if do.Key == "" {
		do.Key = testKey
	}
	do.BaseURL = ts.URL
	rec, err := deepgram.New(do)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{fake: fake, url: ts.URL, rec: rec}
}

func (h *harness) open(ctx context.Context, t *testing.T) *deepgram.LiveStream {
	t.Helper()
	st, err := h.rec.Stream(ctx, audio.Telephone, voice.StreamOptions{})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st.(*deepgram.LiveStream)
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// feed writes a in slices well under the send queue, waiting after each until the fake
// has received it, so a test sending faster than real time never overflows the queue.
func (h *harness) feed(ctx context.Context, t *testing.T, st voice.RecognizerStream, a []byte) {
	t.Helper()
	const slice = 8000 // one second of telephone audio
	start := h.received()
	written := int64(0)
	for len(a) > 0 {
		n := min(slice, len(a))
		if err := st.Write(a[:n]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		a = a[n:]
		written += int64(n)
		want := start + written
		if err := h.fake.WaitFor(ctx, func(cs []fakedeepgram.ConnStats) bool { return sum(cs) >= want }); err != nil {
			t.Fatalf("fake received %d of %d bytes: %v", h.received(), want, err)
		}
	}
}

func (h *harness) received() int64 { return sum(h.fake.Stats()) }

func sum(cs []fakedeepgram.ConnStats) int64 {
	var n int64
	for _, c := range cs {
		n += c.AudioBytes
	}
	return n
}

// collect reads transcripts until stop returns true for the latest or Results is closed.
func collect(ctx context.Context, t *testing.T, st voice.RecognizerStream, stop func(voice.Transcript) bool) []voice.Transcript {
	t.Helper()
	var out []voice.Transcript
	for {
		select {
		case tr, ok := <-st.Results():
			if !ok {
				return out
			}
			out = append(out, tr)
			if stop != nil && stop(tr) {
				return out
			}
		case <-ctx.Done():
			t.Fatalf("waiting for transcripts (got %+v): %v", out, ctx.Err())
		}
	}
}

// finals counts Final transcripts: collect(…, finals(n)) stops at the n-th.
func finals(n int) func(voice.Transcript) bool {
	seen := 0
	return func(tr voice.Transcript) bool {
		if tr.Final {
			seen++
		}
		return seen == n
	}
}

func providerError(t *testing.T, err error) *voice.ProviderError {
	t.Helper()
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *voice.ProviderError", err, err)
	}
	return pe
}

// newScriptServer serves WebSockets on any path with handle and returns its http:// root.
// Its handlers are cancelled and awaited when the test ends.
func newScriptServer(t *testing.T, handle func(ctx context.Context, c *websocket.Conn)) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		wg.Add(1)
		defer wg.Done()
		defer c.CloseNow()
		handle(ctx, c)
	}))
	t.Cleanup(func() {
		ts.Close()
		cancel()
		wg.Wait()
	})
	return ts.URL
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
