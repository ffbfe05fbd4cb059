package sphinx

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testLogger writes the package's logs into the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// wordSamples is how much loud audio the fake decoder turns into one word: 100 ms.
const wordSamples = 1600

// loudSample is the magnitude of the fake caller's "speech": a square wave at 8 kHz,
// about -12 dBFS, far above the gate; every sample counts toward the fake's words.
const loudSample = 8000

// fakeDecoder stands in for PocketSphinx: its hypothesis is one word per wordSamples of
// loud audio fed in the utterance ("W1 W2(2) [NOISE] W3 …", so normalisation shows), and
// it records what it was fed and when it was asked.
type fakeDecoder struct {
	id int

	mu        sync.Mutex // guards following
	inUtt     bool
	fed       []int16 // this utterance's samples
	loud      int     // this utterance's loud samples
	utts      [][]int16
	partialAt []int // len(fed) at each partial()
	starts    int
	closed    bool
	block     chan struct{} // process waits for it to close, when set
	failStart error
	events    chan string // "start N", "end N"
	cmnIn     [][]float32 // the mean each utterance started from
	misuse    []string
}

func newFakeDecoder(id int) *fakeDecoder {
	return &fakeDecoder{id: id, events: make(chan string, 1000)}
}

func (d *fakeDecoder) start(cmn []float32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cmnIn = append(d.cmnIn, cmn)
	if d.failStart != nil {
		return d.failStart
	}
	if d.inUtt || d.closed {
		d.misuse = append(d.misuse, "start in an utterance or after close")
	}
	d.inUtt, d.fed, d.loud, d.partialAt = true, nil, 0, nil
	d.starts++
	d.events <- fmt.Sprintf("start %d", d.id)
	return nil
}

func (d *fakeDecoder) process(pcm []int16) error {
	d.mu.Lock()
	block := d.block
	d.mu.Unlock()
	if block != nil {
		<-block
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.inUtt {
		d.misuse = append(d.misuse, "process outside an utterance")
	}
	d.fed = append(d.fed, pcm...)
	for _, s := range pcm {
		if s >= 1000 || s <= -1000 {
			d.loud++
		}
	}
	return nil
}

func (d *fakeDecoder) hypLocked() string {
	var w []string
	for i := 1; i <= d.loud/wordSamples; i++ {
		word := fmt.Sprintf("W%d", i)
		if i%2 == 0 {
			word += "(2)"
		}
		w = append(w, word)
		if i == 1 {
			w = append(w, "[NOISE]", "<sil>")
		}
	}
	return strings.Join(w, " ")
}

func (d *fakeDecoder) partial() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.partialAt = append(d.partialAt, len(d.fed))
	return d.hypLocked()
}

// end returns as its cepstral mean the number of loud samples the utterance had.
func (d *fakeDecoder) end() (string, []float32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.inUtt {
		d.misuse = append(d.misuse, "end outside an utterance")
	}
	d.inUtt = false
	d.utts = append(d.utts, d.fed)
	d.events <- fmt.Sprintf("end %d", d.id)
	return "<s> " + d.hypLocked() + " </s>", []float32{float32(d.loud)}, nil
}

func (d *fakeDecoder) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.misuse = append(d.misuse, "closed twice")
	}
	d.closed = true
}

func (d *fakeDecoder) startCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.starts
}

func (d *fakeDecoder) setBlock(c chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.block = c
}

func (d *fakeDecoder) snapshot() (utts [][]int16, partialAt []int, inUtt, closed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]int16(nil), d.utts...), append([]int(nil), d.partialAt...), d.inUtt, d.closed
}

// words is what the fake's hypothesis normalises to for n words.
func words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("w%d", i+1)
	}
	return strings.Join(w, " ")
}

// testTuning is the default tuning: the fakes make audio time free, so tests use the real
// thresholds unless a test needs another.
func testTuning() tuning { return defaultTuning() }

type rig struct {
	r     *Recognizer
	decs  []*fakeDecoder
	clock *clock.Fake
}

func newRig(t *testing.T, n int, tune tuning) *rig {
	t.Helper()
	rg := &rig{clock: clock.NewFake(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))}
	decs := make([]decoder, n)
	for i := range n {
		rg.decs = append(rg.decs, newFakeDecoder(i))
		decs[i] = rg.decs[i]
	}
	rg.r = newRecognizer(Options{ModelDir: "fake", Decoders: n, Logger: testLogger(t)}, decs, rg.clock, tune)
	t.Cleanup(func() {
		_ = rg.r.Close()
		for _, d := range rg.decs {
			_, _, _, closed := d.snapshot()
			d.mu.Lock()
			misuse := d.misuse
			d.mu.Unlock()
			if !closed {
				t.Errorf("decoder %d not freed by Recognizer.Close", d.id)
			}
			if len(misuse) > 0 {
				t.Errorf("decoder %d misused: %v", d.id, misuse)
			}
		}
	})
	return rg
}

// open starts a stream in format f and closes it at the end of the test.
func (rg *rig) open(t *testing.T, f audio.Format) *stream {
	t.Helper()
	rs, err := rg.r.Stream(context.Background(), f, voice.StreamOptions{CallID: voice.CallID(t.Name())})
	if err != nil {
		t.Fatal(err)
	}
	s := rs.(*stream)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// free is how many decoders are in the pool, and how many streams wait for one.
func (rg *rig) free() (int, int) { return rg.r.pool.counts() }

// wide is the 16 kHz PCM16 format the logic tests speak.
var wide = audio.Format{Encoding: audio.PCM16, Rate: 16000}

// loud is d of the fake caller's speech at 16 kHz.
func loud(d time.Duration) []int16 {
	pcm := make([]int16, samplesIn(d))
	for i := range pcm {
		pcm[i] = loudSample
		if i%2 == 1 {
			pcm[i] = -loudSample
		}
	}
	return pcm
}

// quiet is d of digital silence at 16 kHz.
func quiet(d time.Duration) []int16 { return make([]int16, samplesIn(d)) }

// hiss is d of a square wave of amplitude a at 16 kHz: a=50 is about -56 dBFS, below the
// gate; a=200 is about -44 dBFS, above it; neither counts as a word for the fake.
func hiss(d time.Duration, a int16) []int16 {
	pcm := make([]int16, samplesIn(d))
	for i := range pcm {
		pcm[i] = a
		if i%2 == 1 {
			pcm[i] = -a
		}
	}
	return pcm
}

func pcmBytes(pcm []int16) []byte {
	b := make([]byte, 2*len(pcm))
	for i, s := range pcm {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(s))
	}
	return b
}

func cat(parts ...[]int16) []int16 {
	var out []int16
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// write sends pcm (16 kHz) to s in 20 ms frames, as the call engine does, and waits until
// the stream's goroutine has heard all of it.
func write(t *testing.T, s *stream, pcm []int16) {
	t.Helper()
	send(t, s, pcm)
	settle(t, s)
}

// send writes pcm (16 kHz) to s in 20 ms frames and returns at once.
func send(t *testing.T, s *stream, pcm []int16) {
	t.Helper()
	b := pcmBytes(pcm)
	fb := s.f.FrameBytes()
	for len(b) > 0 {
		n := min(fb, len(b))
		if err := s.Write(b[:n]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		b = b[n:]
	}
}

// settle waits until the stream's goroutine has handled everything queued: its inbox is
// empty and it waits in its select.
func settle(t *testing.T, s *stream) {
	t.Helper()
	eventually(t, "the stream to hear its queue", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.in.empty() && !s.busy.Load()
	})
}

// patience bounds the waits below: they end on the event they wait for, and only a hang
// reaches it, so it is generous for a loaded machine.
const patience = 30 * time.Second

// eventually polls cond until it holds or patience runs out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// next receives the next transcript, failing after patience.
func next(t *testing.T, s *stream) voice.Transcript {
	t.Helper()
	select {
	case tr, ok := <-s.Results():
		if !ok {
			t.Fatal("Results closed")
		}
		return tr
	case <-time.After(patience):
		t.Fatalf("no transcript within %v", patience)
	}
	return voice.Transcript{}
}

// final skips partials up to the next Final and returns it with the partials.
func final(t *testing.T, s *stream) (voice.Transcript, []string) {
	t.Helper()
	var partials []string
	for {
		tr := next(t, s)
		if tr.Final {
			return tr, partials
		}
		partials = append(partials, tr.Text)
	}
}

// noFinal checks that no Final is waiting on Results; partials are skipped.
func noFinal(t *testing.T, s *stream) {
	t.Helper()
	for {
		select {
		case tr, ok := <-s.Results():
			if !ok {
				t.Fatal("Results closed")
			}
			if tr.Final {
				t.Fatalf("unexpected Final %+v", tr)
			}
		default:
			return
		}
	}
}

// finals forwards the stream's Finals from a goroutine of its own, for tests that write
// more than Results holds before they read; it ends when Results closes.
func finals(s *stream) <-chan string {
	out := make(chan string, 100)
	go func() {
		defer close(out)
		for tr := range s.Results() {
			if tr.Final {
				out <- tr.Text
			}
		}
	}()
	return out
}

func recv(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case text := <-c:
		return text
	case <-time.After(patience):
		t.Fatalf("no Final within %v", patience)
	}
	return ""
}

// drained reads Results until it closes and returns what it delivered.
func drained(t *testing.T, s *stream) []voice.Transcript {
	t.Helper()
	var all []voice.Transcript
	timeout := time.After(patience)
	for {
		select {
		case tr, ok := <-s.Results():
			if !ok {
				return all
			}
			all = append(all, tr)
		case <-timeout:
			t.Fatalf("Results not closed within %v", patience)
		}
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

func sine(cycles float64) float64 { return math.Sin(2 * math.Pi * cycles) }

// rmsDBFS is pcm's RMS level in dBFS.
func rmsDBFS(pcm []int16) float64 {
	var sum float64
	for _, s := range pcm {
		sum += float64(s) * float64(s)
	}
	return 10 * math.Log10(sum/float64(len(pcm))/(fullScale*fullScale))
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
