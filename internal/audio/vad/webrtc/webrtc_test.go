package webrtc

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/resample"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	sharedOnce   sync.Once
	sharedEngine *Engine
	sharedErr    error
)

// engine is one Engine for the whole test binary (compiling takes tens of ms); it is
// never closed, as a server's would not be.
func engine(t testing.TB) *Engine {
	t.Helper()
	path := vadtest.EngineFile(t, "fvad.wasm")
	sharedOnce.Do(func() { sharedEngine, sharedErr = LoadEngine(context.Background(), path) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedEngine
}

func wasmBytes(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(vadtest.EngineFile(t, "fvad.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newDetector(t testing.TB, e *Engine, cfg Config) *Detector {
	t.Helper()
	d, err := e.NewDetector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

type hit struct {
	ev vad.Event
	at int // samples fed when it was reported
}

// feed runs pcm through d in chunks of the sizes next returns and lists the events.
func feed(d vad.Detector, pcm []int16, next func() int) []hit {
	var hits []hit
	for pos := 0; pos < len(pcm); {
		n := min(next(), len(pcm)-pos)
		if ev := d.Process(pcm[pos : pos+n]); ev != vad.None {
			hits = append(hits, hit{ev, pos + n})
		}
		pos += n
	}
	return hits
}

func frames(rate int) func() int { return func() int { return rate / 50 } }

func webrtcCandidate(e *Engine) vadtest.Candidate {
	return vadtest.Candidate{
		Name: "webrtc (fvad.wasm on wazero), mode 3, 10 ms frames",
		New: func(rate int) (vad.Detector, func(), error) {
			d, err := e.NewDetector(Config{Rate: rate})
			if err != nil {
				return nil, nil, err
			}
			return d, func() { d.Close() }, nil
		},
		Lags: func(int) vadtest.Lags { return vadtest.Lags{Start: DefaultStartAfter, End: DefaultEndAfter} },
	}
}

func TestAccuracyOnRealSpeech(t *testing.T) {
	e := engine(t)
	for _, phone := range []bool{false, true} {
		results := vadtest.Evaluate(t, webrtcCandidate(e), vadtest.Conditions(phone))
		vadtest.CheckClean(t, "webrtc", results, vadtest.Floors{RawF1: 0.85, SegmentF1: 0.85, AllDetected: true})
		for _, r := range results {
			// Down to 10 dB SNR the detector must still find the utterances without
			// inventing any; below that WebRTC VAD is known to call noise speech.
			if r.Condition.SNR >= 10 && (r.Detected < r.Utterances-1 || r.FalseStarts > 1) {
				t.Errorf("%v: %d of %d utterances found, %d false starts", r.Condition, r.Detected, r.Utterances, r.FalseStarts)
			}
		}
	}
}

func TestEveryRateFindsTheUtterances(t *testing.T) {
	e := engine(t)
	clean := vadtest.SpeechTrack(t)
	for _, rate := range []int{32000, 48000} {
		tr := clean
		if rate == 48000 { // resample has no 32 kHz: 32 kHz is checked by duplicating samples
			r, err := resample.New(16000, 48000)
			if err != nil {
				t.Fatal(err)
			}
			tr.PCM = r.Process(nil, clean.PCM)
		} else {
			tr.PCM = make([]int16, 2*len(clean.PCM))
			for i, s := range clean.PCM {
				tr.PCM[2*i], tr.PCM[2*i+1] = s, s
			}
		}
		tr.Rate = rate
		d := newDetector(t, e, Config{Rate: rate})
		res, err := vadtest.Run(d, tr, vadtest.Lags{Start: DefaultStartAfter, End: DefaultEndAfter})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d Hz: raw F1 %.3f, segment F1 %.3f, %d/%d found, %d false starts",
			rate, res.Raw.F1(), res.Segment.F1(), res.Detected, res.Utterances, res.FalseStarts)
		if res.Detected != res.Utterances || res.FalseStarts != 0 || res.Raw.F1() < 0.8 {
			t.Errorf("%d Hz: raw F1 %.3f, %d of %d found, %d false starts", rate, res.Raw.F1(), res.Detected, res.Utterances, res.FalseStarts)
		}
	}
}

func TestSilenceAndQuietNoiseNeverTrigger(t *testing.T) {
	e := engine(t)
	for _, rate := range []int{8000, 16000} {
		for name, pcm := range map[string][]int16{
			"digital silence":     audiotest.Silence(rate, 30*time.Second),
			"line noise -70 dBFS": audiotest.WhiteNoise(rate, 30*time.Second, -70, 1),
		} {
			d := newDetector(t, e, Config{Rate: rate})
			if hits := feed(d, pcm, frames(rate)); len(hits) != 0 {
				t.Errorf("%d Hz %s: events %v", rate, name, hits)
			}
		}
	}
}

func TestStartAndEndFollowTheConfiguredDurations(t *testing.T) {
	e := engine(t)
	tr := vadtest.SpeechTrack(t)
	u := tr.Utterances[0]
	n := tr.FrameLen()
	for _, cfg := range []Config{
		{Rate: 16000},
		{Rate: 16000, StartAfter: 300 * time.Millisecond, EndAfter: 900 * time.Millisecond},
	} {
		d := newDetector(t, e, cfg)
		hits := feed(d, tr.PCM[:(u.End+75)*n], frames(16000))
		c := d.Config()
		if len(hits) == 0 || hits[0].ev != vad.SpeechStart || hits[len(hits)-1].ev != vad.SpeechEnd {
			t.Fatalf("%+v: events %v, want a start and an end", c, hits)
		}
		// The start comes at least StartAfter into the utterance (its first labelled frame
		// is 20 ms before the speech by construction), the end at least EndAfter after it.
		startAt := time.Duration(hits[0].at-u.Start*n) * time.Second / 16000
		endAt := time.Duration(hits[len(hits)-1].at-u.End*n) * time.Second / 16000
		if startAt < c.StartAfter-20*time.Millisecond || startAt > c.StartAfter+300*time.Millisecond {
			t.Errorf("%+v: SpeechStart %v into the utterance, want about StartAfter", c, startAt)
		}
		if endAt < c.EndAfter-100*time.Millisecond || endAt > c.EndAfter+300*time.Millisecond {
			t.Errorf("%+v: SpeechEnd %v after the utterance, want about EndAfter", c, endAt)
		}
	}
}

func TestAnyChunkingGivesTheSameEvents(t *testing.T) {
	e := engine(t)
	tr := vadtest.SpeechTrack(t)
	ref := feed(newDetector(t, e, Config{Rate: 16000}), tr.PCM, frames(16000))
	rng := rand.New(rand.NewPCG(1, 2))
	const maxChunk = 1000 // samples: 62.5 ms, less than StartAfter, so no event is queued
	got := feed(newDetector(t, e, Config{Rate: 16000}), tr.PCM, func() int { return 1 + rng.IntN(maxChunk) })
	if len(got) != len(ref) || len(ref) < 2*len(tr.Utterances) {
		t.Fatalf("random chunks gave %d events, 20 ms frames %d (track has %d utterances)", len(got), len(ref), len(tr.Utterances))
	}
	for i := range ref {
		// Both report on the call holding the deciding sample.
		if got[i].ev != ref[i].ev || got[i].at < ref[i].at-320 || got[i].at > ref[i].at+maxChunk {
			t.Errorf("event %d: %v at sample %d, with 20 ms frames %v at %d", i, got[i].ev, got[i].at, ref[i].ev, ref[i].at)
		}
	}
}

func TestOneLongCallQueuesTheRestOfItsEvents(t *testing.T) {
	e := engine(t)
	tr := vadtest.SpeechTrack(t)
	ref := feed(newDetector(t, e, Config{Rate: 16000}), tr.PCM, frames(16000))
	d := newDetector(t, e, Config{Rate: 16000})
	var got []vad.Event
	for ev := d.Process(tr.PCM); ev != vad.None; ev = d.Process(nil) {
		got = append(got, ev)
	}
	if len(got) != len(ref) {
		t.Fatalf("whole track in one call: %d events then None, want the %d of 20 ms frames", len(got), len(ref))
	}
	for i, ev := range got {
		if ev != ref[i].ev {
			t.Fatalf("event %d = %v, want %v", i, ev, ref[i].ev)
		}
	}
	if d.InSpeech() {
		t.Error("InSpeech after the last SpeechEnd")
	}
}

func TestResetReturnsToSilenceAndDetectsSpeechAfresh(t *testing.T) {
	e := engine(t)
	tr := vadtest.SpeechTrack(t)
	u := tr.Utterances[0]
	n := tr.FrameLen()
	d := newDetector(t, e, Config{Rate: 16000})
	mid := (u.Start + u.End) / 2 * n
	hits := feed(d, tr.PCM[:mid], frames(16000))
	if len(hits) != 1 || hits[0].ev != vad.SpeechStart || !d.InSpeech() {
		t.Fatalf("half an utterance: events %v, InSpeech %v; want one SpeechStart", hits, d.InSpeech())
	}
	d.Reset()
	if d.InSpeech() || d.RawSpeech() {
		t.Fatal("InSpeech or RawSpeech after Reset")
	}
	rest := feed(d, tr.PCM[mid:(u.End+60)*n], frames(16000))
	if len(rest) != 2 || rest[0].ev != vad.SpeechStart || rest[1].ev != vad.SpeechEnd {
		t.Fatalf("after Reset: events %v, want the ongoing speech to start afresh and end", rest)
	}
	if since := time.Duration(rest[0].at) * time.Second / 16000; since < DefaultStartAfter {
		t.Errorf("SpeechStart %v after Reset, want at least StartAfter", since)
	}
	// Reset must leave the detector as good as new: the rest of the track gives the same
	// events as a new detector fed the same audio.
	d.Reset()
	from := tr.Utterances[1].Start*n - 16000
	a := feed(d, tr.PCM[from:], frames(16000))
	b := feed(newDetector(t, e, Config{Rate: 16000}), tr.PCM[from:], frames(16000))
	if len(a) != len(b) {
		t.Fatalf("after Reset %d events, new detector %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("event %d after Reset %v, new detector %v", i, a[i], b[i])
		}
	}
}

func TestCloseAndEngineClose(t *testing.T) {
	ctx := context.Background()
	e, err := NewEngine(ctx, wasmBytes(t))
	if err != nil {
		t.Fatal(err)
	}
	tr := vadtest.SpeechTrack(t)
	u := tr.Utterances[0]
	n := tr.FrameLen()

	d, err := e.NewDetector(Config{Rate: 16000})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if ev := d.Process(tr.PCM[u.Start*n : u.End*n]); ev != vad.None || !errors.Is(d.Err(), ErrClosed) {
		t.Errorf("after Close: Process = %v, Err = %v; want None and ErrClosed", ev, d.Err())
	}

	// An Engine closed under a detector in speech: the detector ends the speech once,
	// then reports nothing, and Err says why.
	d, err = e.NewDetector(Config{Rate: 16000})
	if err != nil {
		t.Fatal(err)
	}
	if hits := feed(d, tr.PCM[:(u.Start+30)*n], frames(16000)); len(hits) != 1 {
		t.Fatalf("events %v, want a SpeechStart", hits)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(ctx); err != nil {
		t.Errorf("second Engine.Close: %v", err)
	}
	if ev := d.Process(tr.PCM[(u.Start+30)*n : (u.Start+31)*n]); ev != vad.SpeechEnd {
		t.Errorf("first Process after Engine.Close = %v, want SpeechEnd", ev)
	}
	if ev := d.Process(tr.PCM[(u.Start+31)*n : (u.Start+32)*n]); ev != vad.None || d.InSpeech() {
		t.Errorf("then Process = %v, InSpeech %v; want None, false", ev, d.InSpeech())
	}
	if !errors.Is(d.Err(), ErrClosed) {
		t.Errorf("Err = %v, want ErrClosed", d.Err())
	}
	_ = d.Close()
	if _, err := e.NewDetector(Config{Rate: 16000}); !errors.Is(err, ErrClosed) {
		t.Errorf("NewDetector on a closed Engine: %v, want ErrClosed", err)
	}
}

func TestConcurrentDetectorsAgree(t *testing.T) {
	e := engine(t)
	tr := vadtest.SpeechTrack(t)
	pcm := tr.PCM[:20*16000]
	want := feed(newDetector(t, e, Config{Rate: 16000}), pcm, frames(16000))
	var wg sync.WaitGroup
	got := make([][]hit, 4)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := e.NewDetector(Config{Rate: 16000})
			if err != nil {
				t.Error(err)
				return
			}
			defer d.Close()
			got[g] = feed(d, pcm, frames(16000))
		}()
	}
	wg.Wait()
	for g, hits := range got {
		if len(hits) != len(want) {
			t.Errorf("goroutine %d: %d events, want %d", g, len(hits), len(want))
			continue
		}
		for i := range hits {
			if hits[i] != want[i] {
				t.Errorf("goroutine %d event %d: %v, want %v", g, i, hits[i], want[i])
			}
		}
	}
}

func TestConfigDefaultsAndErrors(t *testing.T) {
	e := engine(t)
	d := newDetector(t, e, Config{Rate: 8000})
	want := Config{Rate: 8000, Mode: ModeVeryAggressive, Frame: 10 * time.Millisecond,
		StartAfter: 100 * time.Millisecond, EndAfter: 500 * time.Millisecond}
	if d.Config() != want || d.SampleRate() != 8000 {
		t.Errorf("Config() = %+v, want %+v", d.Config(), want)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "sample rate 0"},
		{Config{Rate: 22050}, "sample rate 22050"},
		{Config{Rate: 8000, Mode: 5}, "mode(5)"},
		{Config{Rate: 8000, Frame: 15 * time.Millisecond}, "frame 15ms"},
		{Config{Rate: 8000, EndAfter: -time.Second}, "negative"},
	} {
		if _, err := e.NewDetector(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want one containing %q", tc.cfg, err, tc.want)
		}
	}
	for _, m := range []Mode{ModeQuality, ModeLowBitrate, ModeAggressive, ModeVeryAggressive} {
		for _, f := range []time.Duration{10, 20, 30} {
			d := newDetector(t, e, Config{Rate: 48000, Mode: m, Frame: f * time.Millisecond})
			d.Process(make([]int16, 960))
			if d.Err() != nil {
				t.Errorf("%v, %d ms: %v", m, f, d.Err())
			}
		}
	}
	if LibfvadMode(0) != ModeQuality || LibfvadMode(3) != ModeVeryAggressive {
		t.Error("LibfvadMode maps 0-3 wrongly")
	}
	if _, err := e.NewDetector(Config{Rate: 8000, Mode: LibfvadMode(4)}); err == nil {
		t.Error("LibfvadMode(4) accepted")
	}
	if s := ModeDefault.String() + " " + ModeAggressive.String() + " " + Mode(9).String(); s != "default aggressive mode(9)" {
		t.Errorf("Mode strings: %q", s)
	}
}

func TestNewEngineRejectsOtherModules(t *testing.T) {
	ctx := context.Background()
	for name, wasm := range map[string][]byte{
		"not wasm":     []byte("hello"),
		"empty module": []byte("\x00asm\x01\x00\x00\x00"),
	} {
		e, err := NewEngine(ctx, wasm)
		if err == nil {
			e.Close(ctx)
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := LoadEngine(ctx, "/nonexistent/fvad.wasm"); err == nil || !strings.Contains(err.Error(), "fvad.wasm") {
		t.Errorf("missing file: %v", err)
	}
}

func TestEngineLowersInitialMemory(t *testing.T) {
	e := engine(t)
	if got := e.InitialMemory(); got != lowInitialPages*pageSize {
		t.Errorf("InitialMemory = %d, want %d", got, lowInitialPages*pageSize)
	}
	// A whole track at 48 kHz (the largest frames) fits without growing.
	d := newDetector(t, e, Config{Rate: 48000, Frame: 30 * time.Millisecond})
	feed(d, make([]int16, 48000), frames(48000))
	if d.Memory() != e.InitialMemory() || d.Err() != nil {
		t.Errorf("Memory = %d after a second at 48 kHz (err %v), want %d", d.Memory(), d.Err(), e.InitialMemory())
	}
}

func TestEngineFallsBackWhenTheLoweredModuleFails(t *testing.T) {
	ctx := context.Background()
	broken := func(b []byte) ([]byte, error) { return b[:len(b)/2], nil }
	e, err := newEngineLowered(ctx, wasmBytes(t), broken)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	if got := e.InitialMemory(); got != 258*pageSize {
		t.Errorf("InitialMemory = %d, want the declared 258 pages", got)
	}
}

func TestWithInitialPages(t *testing.T) {
	wasm := wasmBytes(t)
	if _, err := withInitialPages(wasm, 1000); err == nil { // more than declared
		t.Error("raising the initial memory: no error")
	}
	// One page would cut through the stack, which this build places below 67696.
	low, err := withInitialPages(wasm, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := initialPages(low); err != nil || got != 2 {
		t.Errorf("asked for 1 page: module declares %d (%v), want the 2 its layout needs", got, err)
	}
	for _, bad := range [][]byte{nil, []byte("\x00asm\x01\x00\x00\x00"), []byte("\x00asm\x01\x00\x00\x00\x05\xff")} {
		if _, err := withInitialPages(bad, 2); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// initialPages is the declared initial memory of a module, by compiling it.
func initialPages(wasm []byte) (uint32, error) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	m, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return 0, err
	}
	return m.ExportedMemories()[exportMemory].Min(), nil
}

func TestAssertionInLibfvadIsAnError(t *testing.T) {
	e := engine(t)
	d := newDetector(t, e, Config{Rate: 8000})
	// fvad_process on a NULL instance fails libfvad's assert(inst).
	_, err := d.call(d.process, 0, uint64(d.buf), 80)
	if !errors.Is(err, errAssert) || !strings.Contains(err.Error(), "fvad_process") {
		t.Errorf("err = %v, want the libfvad assertion naming fvad_process", err)
	}
}

func TestMemoryPerDetector(t *testing.T) {
	e := engine(t)
	const n = 100
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ds := make([]*Detector, n)
	for i := range ds {
		ds[i] = newDetector(t, e, Config{Rate: 16000})
		ds[i].Process(make([]int16, 320))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := int64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("Go heap per detector: %d KiB (linear memory %d KiB)", per/1024, ds[0].Memory()/1024)
	if per > 512*1024 {
		t.Errorf("%d KiB per detector, want under 512 KiB", per/1024)
	}
	runtime.KeepAlive(ds)
}

func BenchmarkProcess20ms(b *testing.B) {
	for _, rate := range []int{8000, 16000} {
		b.Run(map[int]string{8000: "8kHz", 16000: "16kHz"}[rate], func(b *testing.B) {
			e := engine(b)
			d := newDetector(b, e, Config{Rate: rate})
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

func BenchmarkNewDetector(b *testing.B) {
	e := engine(b)
	b.ReportAllocs()
	for range b.N {
		d, err := e.NewDetector(Config{Rate: 8000})
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}
