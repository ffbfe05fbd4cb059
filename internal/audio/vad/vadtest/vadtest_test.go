package vadtest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/vad"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSpeechTrackShape(t *testing.T) {
	tr := SpeechTrack(t)
	if tr.Rate != 16000 || len(tr.Speech) != len(tr.PCM)/tr.FrameLen() || len(tr.PCM)%tr.FrameLen() != 0 {
		t.Fatalf("rate %d, %d samples, %d labels", tr.Rate, len(tr.PCM), len(tr.Speech))
	}
	if len(tr.Utterances) != len(speechFiles) {
		t.Fatalf("%d utterances, want one per recording (%d)", len(tr.Utterances), len(speechFiles))
	}
	speech := 0
	for _, s := range tr.Speech {
		if s {
			speech++
		}
	}
	share := float64(speech) / float64(len(tr.Speech))
	t.Logf("track: %v, %d utterances, %.0f%% of frames speech", tr.Duration(), len(tr.Utterances), 100*share)
	if share < 0.35 || share > 0.7 {
		t.Errorf("%.0f%% of frames labelled speech, want roughly half", 100*share)
	}
	prevEnd := 0
	for i, u := range tr.Utterances {
		// At least 1 s of gap (50 frames) separates utterances, and nothing in it is speech.
		if u.Start-prevEnd < 50 && i > 0 {
			t.Errorf("utterance %d starts %d frames after the previous one", i, u.Start-prevEnd)
		}
		for j := prevEnd; j < u.Start; j++ {
			if tr.Speech[j] {
				t.Fatalf("frame %d between utterances labelled speech", j)
			}
		}
		if !tr.Speech[u.Start] || !tr.Speech[u.End-1] || u.End-u.Start < 25 {
			t.Errorf("utterance %d %v: not speech at its ends or shorter than 0.5 s", i, u)
		}
		prevEnd = u.End
	}
}

func TestLabelMarksBurstsWithOnsetAndHangover(t *testing.T) {
	const rate = 16000
	pcm := audiotest.Concat(
		audiotest.WhiteNoise(rate, time.Second, -60, 1),
		audiotest.Tone(rate, 440, 500*time.Millisecond, 0.1),
		audiotest.WhiteNoise(rate, time.Second, -60, 2),
		audiotest.Tone(rate, 440, 20*time.Millisecond, 0.5), // a click: one frame
		audiotest.WhiteNoise(rate, time.Second, -60, 3),
	)
	labels := Label(pcm, rate)
	for i, got := range labels {
		want := i >= 50-labelPreOnset && i < 75+labelHangover
		if got != want {
			t.Errorf("frame %d labelled %v, want %v (burst in frames 50-74, click at 125)", i, got, want)
		}
	}
}

// bandLevel is the mean Goertzel power of pcm around hz, over 50 ms segments.
func bandLevel(pcm []int16, rate int, hz float64) float64 {
	seg := rate / 20
	var sum float64
	var n int
	for i := 0; i+seg <= len(pcm); i += seg {
		for _, f := range []float64{hz * 0.9, hz, hz * 1.1} {
			sum += audiotest.Goertzel(pcm[i:i+seg], rate, f)
			n++
		}
	}
	return 10 * math.Log10(sum/float64(n))
}

func TestNoiseSpectra(t *testing.T) {
	const rate = 16000
	toPCM := func(v []float64) []int16 {
		out := make([]int16, len(v))
		for i, x := range v {
			out[i] = clip(x)
		}
		return out
	}
	white := toPCM(NoiseSignal(White, 10*rate, rate, 1))
	pink := toPCM(NoiseSignal(Pink, 10*rate, rate, 1))
	if l := audiotest.RMSDBFS(pink); math.Abs(l+20) > 0.1 {
		t.Errorf("pink noise at %.2f dBFS, want -20", l)
	}
	if d := bandLevel(white, rate, 250) - bandLevel(white, rate, 2000); math.Abs(d) > 1 {
		t.Errorf("white noise: 250 Hz is %.1f dB above 2 kHz, want 0", d)
	}
	// Pink: 3 octaves apart is 9 dB.
	for _, lo := range []float64{125, 250, 500} {
		d := bandLevel(pink, rate, lo) - bandLevel(pink, rate, 8*lo)
		t.Logf("pink: %g Hz is %.1f dB above %g Hz", lo, d, 8*lo)
		if math.Abs(d-9) > 2 {
			t.Errorf("pink noise: %g Hz is %.1f dB above %g Hz, want about 9", lo, d, 8*lo)
		}
	}
}

func TestApplyMixesAtTheActiveSpeechSNR(t *testing.T) {
	clean := SpeechTrack(t)
	for _, c := range []Condition{{Noise: White, SNR: 10}, {Noise: Pink, SNR: 0}} {
		noisy := Degraded(t, c)
		var ps, pn float64
		for i, s := range clean.PCM {
			if clean.Speech[i/clean.FrameLen()] {
				ps += float64(s) * float64(s)
			}
			r := float64(noisy.PCM[i]) - float64(s)
			pn += r * r
		}
		speechFrames := 0
		for _, s := range clean.Speech {
			if s {
				speechFrames++
			}
		}
		got := 10 * math.Log10(ps/float64(speechFrames*clean.FrameLen())/(pn/float64(len(clean.PCM))))
		if math.Abs(got-c.SNR) > 0.1 {
			t.Errorf("%v: measured SNR %.2f dB", c, got)
		}
	}
}

func TestTelephoneKeepsFramesAligned(t *testing.T) {
	const rate = 16000
	pcm := audiotest.Concat(
		audiotest.Silence(rate, time.Second),
		audiotest.Tone(rate, 1000, 200*time.Millisecond, 0.3),
		audiotest.Silence(rate, time.Second),
	)
	phone, err := Telephone(pcm, rate)
	if err != nil {
		t.Fatal(err)
	}
	if len(phone) != len(pcm)/2 {
		t.Fatalf("%d samples out of %d, want half", len(phone), len(pcm))
	}
	// The tone fills frames 50-59; its edges must not move by a frame.
	for i := range len(phone) / 160 {
		l := audiotest.RMSDBFS(phone[i*160 : (i+1)*160])
		if loud := l > -30; loud != (i >= 50 && i < 60) {
			t.Errorf("frame %d at %.1f dBFS after the phone path", i, l)
		}
	}
	if _, err := Telephone(pcm, 44100); err == nil {
		t.Error("44.1 kHz accepted")
	}
}

// scripted reports the given events at the given frames and nothing else.
type scripted struct {
	events   map[int]vad.Event
	frame    int
	inSpeech bool
	rate     int
}

func (s *scripted) Process([]int16) vad.Event {
	ev := s.events[s.frame]
	s.frame++
	switch ev {
	case vad.SpeechStart:
		s.inSpeech = true
	case vad.SpeechEnd:
		s.inSpeech = false
	}
	return ev
}
func (s *scripted) Reset()          {}
func (s *scripted) InSpeech() bool  { return s.inSpeech }
func (s *scripted) SampleRate() int { return s.rate }

func TestRunScoresSegmentsAndUtterances(t *testing.T) {
	// 300 frames; utterances at 50-99, 150-179 and 220-259.
	tr := Track{Rate: 8000, PCM: make([]int16, 300*160), Speech: make([]bool, 300),
		Utterances: []Span{{50, 100}, {150, 180}, {220, 260}}}
	for _, u := range tr.Utterances {
		for i := u.Start; i < u.End; i++ {
			tr.Speech[i] = true
		}
	}
	lags := Lags{Start: 100 * time.Millisecond, End: 200 * time.Millisecond} // 5 and 10 frames
	d := &scripted{rate: 8000, events: map[int]vad.Event{
		// Utterance 1 found exactly: start reported 5 frames in, end 10 frames after.
		54: vad.SpeechStart, 109: vad.SpeechEnd,
		// A false start in the gap: segment 120-124.
		124: vad.SpeechStart, 134: vad.SpeechEnd,
		// Utterance 2 split in two: 150-164 and 174-179.
		154: vad.SpeechStart, 174: vad.SpeechEnd, 178: vad.SpeechStart, 189: vad.SpeechEnd,
		// Utterance 3 starts early by 20 frames (within 500 ms) and never ends.
		204: vad.SpeechStart,
	}}
	res, err := Run(d, tr, lags)
	if err != nil {
		t.Fatal(err)
	}
	if res.Detected != 3 || res.Split != 1 || res.Merged != 0 || res.FalseStarts != 1 || res.HasRaw {
		t.Errorf("found %d, split %d, merged %d, false %d, raw %v; want 3, 1, 0, 1, false",
			res.Detected, res.Split, res.Merged, res.FalseStarts, res.HasRaw)
	}
	// Segments: 50-99, 120-124, 150-164, 174-179, 200-299; utterance 2 misses 165-173.
	want := Score{TP: 50 + 15 + 6 + 40, FP: 5 + 20 + 40, FN: 9}
	want.TN = 300 - want.TP - want.FP - want.FN
	if res.Segment != want {
		t.Errorf("segment score %+v, want %+v", res.Segment, want)
	}
	// Start delays: 5, 5 and -15 frames (the event frame's end); end delays: 10 (utterance
	// 1) and 10 (utterance 2's last segment); utterance 3 never ended.
	if res.StartDelay != time.Duration(5+5-15)*FrameDuration/3 || res.EndDelay != 10*FrameDuration {
		t.Errorf("delays %v, %v", res.StartDelay, res.EndDelay)
	}
	if !strings.Contains(Table("x", []Result{res}), " 3/3 ") {
		t.Errorf("table:\n%s", Table("x", []Result{res}))
	}

	// One segment across the gap: utterance 2 merged into utterance 1.
	res, err = Run(&scripted{rate: 8000, events: map[int]vad.Event{54: vad.SpeechStart, 199: vad.SpeechEnd}}, tr, lags)
	if err != nil || res.Detected != 1 || res.Merged != 1 || res.FalseStarts != 0 {
		t.Errorf("merged: %+v, %v", res, err)
	}
	// Starting in noise long before an utterance is a false start, not a find.
	res, err = Run(&scripted{rate: 8000, events: map[int]vad.Event{10: vad.SpeechStart, 120: vad.SpeechEnd}}, tr, lags)
	if err != nil || res.Detected != 0 || res.FalseStarts != 1 {
		t.Errorf("early start: %+v, %v", res, err)
	}
}

func TestRunRejectsBrokenDetectors(t *testing.T) {
	tr := Track{Rate: 8000, PCM: make([]int16, 100*160), Speech: make([]bool, 100)}
	for name, d := range map[string]vad.Detector{
		"end without start": &scripted{rate: 8000, events: map[int]vad.Event{3: vad.SpeechEnd}},
		"start twice":       &scripted{rate: 8000, events: map[int]vad.Event{3: vad.SpeechStart, 5: vad.SpeechStart}},
		"wrong rate":        &scripted{rate: 16000},
	} {
		if _, err := Run(d, tr, Lags{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// endTB records the message a test ended with (a failure, or a skip for a missing peer)
// and stops the function, as testing.T does.
type endTB struct {
	testing.TB
	msg string
}

func (f *endTB) Helper() {}
func (f *endTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	panic(f)
}
func (f *endTB) Fatalf(format string, args ...any) { f.Fatal(fmt.Sprintf(format, args...)) }
func (f *endTB) Skip(args ...any)                  { f.Fatal(args...) }

// ended runs fn with an endTB and returns the message it ended with ("" if none).
func ended(t *testing.T, fn func(testing.TB)) string {
	f := &endTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != any(f) {
				panic(r)
			}
		}()
		fn(f)
	}()
	return f.msg
}

func TestMissingEngineFileEndsTheTestWithInstructions(t *testing.T) {
	t.Setenv("HANDSET_ENGINES_DIR", t.TempDir())
	msg := ended(t, func(tb testing.TB) { EngineFile(tb, "fvad.wasm") })
	if !strings.Contains(msg, "./scripts/engines.sh") {
		t.Errorf("missing engine file: message %q, want one naming ./scripts/engines.sh", msg)
	}
}

func TestMissingRecordingsEndTheTestWithInstructions(t *testing.T) {
	t.Setenv("HANDSET_SPEECH_DIR", t.TempDir())
	msg := ended(t, func(tb testing.TB) { Recordings(tb) })
	if !strings.Contains(msg, "apt-get install pocketsphinx-testdata") {
		t.Errorf("missing recordings: message %q, want one naming pocketsphinx-testdata's install", msg)
	}
}

func TestEnginesDirIsInTheModuleRoot(t *testing.T) {
	t.Setenv("HANDSET_ENGINES_DIR", "")
	dir, err := EnginesDir()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(dir))
	if filepath.Base(dir) != "engines" || filepath.Base(filepath.Dir(dir)) != ".cache" {
		t.Errorf("EnginesDir = %s", dir)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("no go.mod next to %s: %v", dir, err)
	}
}

func TestMissingRecordingsSayHowToInstallThem(t *testing.T) {
	_, err := LoadRecordings(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "pocketsphinx-testdata") {
		t.Errorf("err = %v, want one naming pocketsphinx-testdata", err)
	}
}
