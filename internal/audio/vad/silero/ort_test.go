//go:build embedded

package silero

import (
	"bufio"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
)

// modelPath initialises ONNX Runtime from the engines directory and returns the model's
// path; a missing file fails the test, naming scripts/engines.sh.
func modelPath(t testing.TB) string {
	t.Helper()
	lib := vadtest.EngineFile(t, "libonnxruntime.so")
	model := vadtest.EngineFile(t, "silero_vad_v5.onnx")
	if err := Init(lib); err != nil {
		t.Fatal(err)
	}
	return model
}

func newSilero(t testing.TB, cfg Config) *Detector {
	t.Helper()
	cfg.ModelPath = modelPath(t)
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

type event struct {
	ev vad.Event
	at int // samples fed when it was reported
}

func feed(d vad.Detector, pcm []int16, next func() int) []event {
	var evs []event
	for pos := 0; pos < len(pcm); {
		n := min(next(), len(pcm)-pos)
		if ev := d.Process(pcm[pos : pos+n]); ev != vad.None {
			evs = append(evs, event{ev, pos + n})
		}
		pos += n
	}
	return evs
}

func frames(rate int) func() int { return func() int { return rate / 50 } }

func sileroCandidate(t testing.TB) vadtest.Candidate {
	model := modelPath(t)
	return vadtest.Candidate{
		Name: "silero v5 (onnxruntime_go, 1 thread), activation 0.5",
		New: func(rate int) (vad.Detector, func(), error) {
			d, err := New(Config{ModelPath: model, Rate: rate})
			if err != nil {
				return nil, nil, err
			}
			return d, func() { d.Close() }, nil
		},
		Lags: func(rate int) vadtest.Lags {
			d := newDetector(Config{Rate: rate, MinSpeech: DefaultMinSpeech, MinSilence: DefaultMinSilence}, nil)
			start, end := d.Lags()
			return vadtest.Lags{Start: start, End: end}
		},
	}
}

func TestAvailableWithTheTag(t *testing.T) {
	if !Available() {
		t.Error("Available() = false in a build with the embedded tag")
	}
}

func TestAccuracyOnRealSpeech(t *testing.T) {
	c := sileroCandidate(t)
	for _, phone := range []bool{false, true} {
		results := vadtest.Evaluate(t, c, vadtest.Conditions(phone))
		vadtest.CheckClean(t, "silero", results, vadtest.Floors{RawF1: 0.85, SegmentF1: 0.85, AllDetected: true})
		for _, r := range results {
			// Silero's claim over the others: it holds up in noise. Down to 5 dB SNR
			// every utterance is found with at most one false start.
			if r.Condition.SNR >= 5 && (r.Detected != r.Utterances || r.FalseStarts > 1) {
				t.Errorf("%v: %d of %d utterances found, %d false starts", r.Condition, r.Detected, r.Utterances, r.FalseStarts)
			}
		}
	}
}

func TestSilenceAndQuietNoiseNeverTrigger(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		for name, pcm := range map[string][]int16{
			"digital silence":     audiotest.Silence(rate, 20*time.Second),
			"line noise -60 dBFS": audiotest.WhiteNoise(rate, 20*time.Second, -60, 1),
		} {
			d := newSilero(t, Config{Rate: rate})
			if evs := feed(d, pcm, frames(rate)); len(evs) != 0 {
				t.Errorf("%d Hz %s: events %v", rate, name, evs)
			}
		}
	}
}

// probabilities runs pcm through d one window at a time, calling between before each,
// and returns the model's probability for every window.
func probabilities(d *Detector, pcm []int16, between func()) []float32 {
	w := Window(d.SampleRate())
	var ps []float32
	for i := 0; i+w <= len(pcm); i += w {
		between()
		d.Process(pcm[i : i+w])
		ps = append(ps, d.Probability())
	}
	return ps
}

func TestTensorsSurviveGarbageCollection(t *testing.T) {
	// The onnxruntime_go pitfall: tensor memory the GC may free under ONNX Runtime. Two
	// detectors hear the same 20 s; one runs with a GC and fresh garbage before every
	// window. Their probabilities must agree exactly.
	pcm := vadtest.SpeechTrack(t).PCM[:20*16000]
	calm := probabilities(newSilero(t, Config{Rate: 16000}), pcm, func() {})
	var sink [][]byte
	stormy := probabilities(newSilero(t, Config{Rate: 16000}), pcm, func() {
		sink = append(sink[:0], make([]byte, 1<<16), make([]byte, 4096))
		runtime.GC()
	})
	speech := 0
	for i := range calm {
		if calm[i] != stormy[i] {
			t.Fatalf("window %d: probability %v with GCs, %v without", i, stormy[i], calm[i])
		}
		if calm[i] > 0.5 {
			speech++
		}
	}
	if speech < len(calm)/4 {
		t.Errorf("only %d of %d windows of real speech above 0.5: the model is not being fed", speech, len(calm))
	}
}

func TestAnyChunkingGivesTheSameEvents(t *testing.T) {
	tr := vadtest.SpeechTrack(t)
	ref := feed(newSilero(t, Config{Rate: 16000}), tr.PCM, frames(16000))
	rng := rand.New(rand.NewPCG(3, 4))
	const maxChunk = 1000
	got := feed(newSilero(t, Config{Rate: 16000}), tr.PCM, func() int { return 1 + rng.IntN(maxChunk) })
	if len(got) != len(ref) || len(ref) < 2*len(tr.Utterances) {
		t.Fatalf("random chunks gave %d events, 20 ms frames %d (track has %d utterances)", len(got), len(ref), len(tr.Utterances))
	}
	for i := range ref {
		if got[i].ev != ref[i].ev || got[i].at < ref[i].at-320 || got[i].at > ref[i].at+maxChunk {
			t.Errorf("event %d: %v at sample %d, with 20 ms frames %v at %d", i, got[i].ev, got[i].at, ref[i].ev, ref[i].at)
		}
	}
}

func TestResetIsAsGoodAsNew(t *testing.T) {
	tr := vadtest.SpeechTrack(t)
	u := tr.Utterances[0]
	n := tr.FrameLen()
	d := newSilero(t, Config{Rate: 16000})
	mid := (u.Start + u.End) / 2 * n
	if evs := feed(d, tr.PCM[:mid+77], frames(16000)); len(evs) != 1 || !d.InSpeech() {
		t.Fatalf("half an utterance: events %v, want a SpeechStart", evs)
	}
	d.Reset()
	if d.InSpeech() || d.RawSpeech() {
		t.Fatal("in speech after Reset")
	}
	from := tr.Utterances[1].Start*n - 16000
	a := probabilities(d, tr.PCM[from:from+10*16000], func() {})
	b := probabilities(newSilero(t, Config{Rate: 16000}), tr.PCM[from:from+10*16000], func() {})
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("window %d after Reset: probability %v, new detector %v", i, a[i], b[i])
		}
	}
}

// Detectors share one session per model: several at once, at both rates, must each get
// what a detector alone gets.
func TestConcurrentDetectorsAgree(t *testing.T) {
	model := modelPath(t)
	audioAt := map[int][]int16{
		8000:  vadtest.Degraded(t, vadtest.Condition{Phone: true}).PCM[:15*8000],
		16000: vadtest.SpeechTrack(t).PCM[:15*16000],
	}
	want := map[int][]event{}
	for rate, pcm := range audioAt {
		want[rate] = feed(newSilero(t, Config{Rate: rate}), pcm, frames(rate))
	}
	var wg sync.WaitGroup
	got := make([][]event, 6)
	rateOf := func(g int) int { return []int{8000, 16000}[g%2] }
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rate := rateOf(g)
			d, err := New(Config{ModelPath: model, Rate: rate})
			if err != nil {
				t.Error(err)
				return
			}
			defer d.Close()
			got[g] = feed(d, audioAt[rate], frames(rate))
		}()
	}
	wg.Wait()
	for g := range got {
		w := want[rateOf(g)]
		if len(got[g]) != len(w) {
			t.Errorf("goroutine %d: %d events, want %d", g, len(got[g]), len(w))
			continue
		}
		for i := range w {
			if got[g][i] != w[i] {
				t.Errorf("goroutine %d event %d: %v, want %v", g, i, got[g][i], w[i])
			}
		}
	}
}

func TestInitIsIdempotentAndSafeForConcurrentCallers(t *testing.T) {
	lib := vadtest.EngineFile(t, "libonnxruntime.so")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = Init(lib) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if err := Init(filepath.Join(filepath.Dir(lib), ".", filepath.Base(lib))); err != nil {
		t.Errorf("same library by another spelling: %v", err)
	}
	other := filepath.Join(t.TempDir(), "libonnxruntime.so")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Init(other); err == nil || !strings.Contains(err.Error(), "already loaded") {
		t.Errorf("another library: %v, want an error saying one is already loaded", err)
	}
	if err := Init(""); err == nil {
		t.Error("Init(\"\") succeeded")
	}
}

func TestNewRejectsMissingAndWrongModels(t *testing.T) {
	modelPath(t)
	if _, err := New(Config{ModelPath: "/nonexistent/silero.onnx", Rate: 16000}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing model: %v", err)
	}
	wrong := vadtest.EngineFile(t, "fvad.wasm")
	if _, err := New(Config{ModelPath: wrong, Rate: 16000}); err == nil || !strings.Contains(err.Error(), wrong) {
		t.Errorf("fvad.wasm as the model: %v, want an error naming it", err)
	}
	ready.Store(false)
	_, err := New(Config{ModelPath: wrong, Rate: 16000})
	ready.Store(true)
	if !errors.Is(err, ErrNotInitialized) {
		t.Errorf("before Init: %v, want ErrNotInitialized", err)
	}
}

func TestCloseFreesTheSession(t *testing.T) {
	d, err := New(Config{ModelPath: modelPath(t), Rate: 16000})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if ev := d.Process(make([]int16, 4096)); ev != vad.None || !errors.Is(d.Err(), ErrClosed) {
		t.Errorf("after Close: %v, Err %v", ev, d.Err())
	}
}

// rssKiB is the process's resident set size from /proc/self/status.
func rssKiB(t testing.TB) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kib, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return kib
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func TestMemoryPerDetector(t *testing.T) {
	model := modelPath(t)
	warm := newSilero(t, Config{Rate: 16000}) // ONNX Runtime's one-off allocations
	warm.Process(make([]int16, 512))
	const n = 20
	runtime.GC()
	before := rssKiB(t)
	ds := make([]*Detector, n)
	for i := range ds {
		d, err := New(Config{ModelPath: model, Rate: 16000})
		if err != nil {
			t.Fatal(err)
		}
		d.Process(make([]int16, 1024))
		ds[i] = d
	}
	runtime.GC()
	per := (rssKiB(t) - before) / n
	for _, d := range ds {
		d.Close()
	}
	t.Logf("resident memory per detector (session, tensors, Go side): %d KiB", per)
	if per > 16*1024 {
		t.Errorf("%d KiB per detector, want under 16 MiB", per)
	}
}

func BenchmarkProcess20ms(b *testing.B) {
	for _, rate := range []int{8000, 16000} {
		b.Run(map[int]string{8000: "8kHz", 16000: "16kHz"}[rate], func(b *testing.B) {
			d := newSilero(b, Config{Rate: rate})
			pcm := vadtest.SpeechTrack(b).PCM
			if rate == 8000 {
				pcm = vadtest.Degraded(b, vadtest.Condition{Phone: true}).PCM
			}
			n := rate / 50
			frames := len(pcm) / n
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				f := i % frames
				d.Process(pcm[f*n : (f+1)*n])
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	model := modelPath(b)
	b.ReportAllocs()
	for range b.N {
		d, err := New(Config{ModelPath: model, Rate: 8000})
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}
