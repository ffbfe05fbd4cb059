package recording

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/obs"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const rate = 8000

// frameAt is one 20 ms mu-law frame of a 440 Hz tone.
var toneFrame = audiotest.Mulaw(audiotest.Tone(rate, 440, audio.FrameDuration, 0.5))

func newRecorder(t testing.TB, f audio.Format) (*Recorder, string, *obs.Journal) {
	t.Helper()
	dir := t.TempDir()
	j, err := obs.Create(dir, "c1", t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	path := filepath.Join(obs.Dir(dir, "c1"), FileName)
	r, err := New(Options{Path: path, Format: f, Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	return r, path, j
}

// channels reads a recording's two channels whole (tests only: recordings are small here).
func channels(t *testing.T, path string) (left, right []int16) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < headerSize {
		t.Fatalf("file of %d bytes", len(b))
	}
	if got, want := binary.LittleEndian.Uint32(b[40:]), uint32(len(b)-headerSize); got != want {
		t.Fatalf("header says %d bytes of data, the file holds %d", got, want)
	}
	if got, want := binary.LittleEndian.Uint32(b[4:]), uint32(len(b)-8); got != want {
		t.Fatalf("RIFF size %d, want %d", got, want)
	}
	for i := headerSize; i+4 <= len(b); i += 4 {
		left = append(left, int16(binary.LittleEndian.Uint16(b[i:])))
		right = append(right, int16(binary.LittleEndian.Uint16(b[i+2:])))
	}
	return left, right
}

// loud reports whether pcm[from:to) holds every 20 ms of it audible (above -30 dBFS).
func loud(pcm []int16, from, to int) bool {
	for s := from; s+160 <= to; s += 160 {
		if audiotest.RMSDBFS(pcm[s:s+160]) < -30 {
			return false
		}
	}
	return true
}

// quiet reports whether pcm[from:to) is all zeros.
func quiet(pcm []int16, from, to int) bool {
	for _, v := range pcm[from:min(to, len(pcm))] {
		if v != 0 {
			return false
		}
	}
	return true
}

func ms(d int) int { return d * rate / 1000 }

func TestBothChannelsShareTheCallsTimeline(t *testing.T) {
	r, path, _ := newRecorder(t, audio.Telephone)
	r.Start(t0)
	// The caller's stream starts 100 ms into the call and runs 2 s; the agent speaks
	// 280 ms from 1.1 s, sent as the playout does: two frames at once, 40 ms apart.
	pair := append(append([]byte(nil), toneFrame...), toneFrame...)
	for i := range 100 {
		at := t0.Add(100*time.Millisecond + time.Duration(i)*audio.FrameDuration)
		r.Caller(at, toneFrame)
		if i >= 50 && i < 64 && i%2 == 0 { // from 1.1 s: 7 pairs, 280 ms

			r.Agent(at, pair)
		}
	}
	if err := r.Close(t0.Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	left, right := channels(t, path)
	if len(left) != ms(2100) {
		t.Fatalf("recording is %d samples, want %d (to the latest audio)", len(left), ms(2100))
	}
	if !quiet(left, 0, ms(100)) || !loud(left, ms(100), ms(2100)) {
		t.Error("caller channel: want silence for 100 ms, then the caller's 2 s")
	}
	if !quiet(right, 0, ms(1100)) || !loud(right, ms(1100), ms(1380)) || !quiet(right, ms(1380), len(right)) {
		t.Error("agent channel: want its 280 ms exactly at 1.1 s, silence elsewhere")
	}
	// The tone's first sample is 0 and its second is not: a shift of one sample shows.
	if right[ms(1100)+1] == 0 || left[ms(100)+1] == 0 {
		t.Error("a frame does not start on the sample of the moment it was sent")
	}
}

func TestAClearTakesOutWhatTheCarrierDropped(t *testing.T) {
	r, path, _ := newRecorder(t, audio.Telephone)
	r.Start(t0)
	for range 25 { // 500 ms queued at once, the carrier buffering it
		r.Agent(t0.Add(time.Second), toneFrame)
	}
	r.Cleared(t0.Add(1100 * time.Millisecond))
	r.Agent(t0.Add(1400*time.Millisecond), toneFrame) // the next turn's audio, after the drain
	if err := r.Close(t0.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, right := channels(t, path)
	if !loud(right, ms(1000), ms(1100)) || !quiet(right, ms(1100), ms(1400)) || !loud(right, ms(1400), ms(1420)) {
		t.Error("want the agent's first 100 ms, silence from the clear, then the next frame at 1.4 s")
	}
}

func TestCallerAudioRejoinsTheClockAfterAGap(t *testing.T) {
	r, path, _ := newRecorder(t, audio.Telephone)
	r.Start(t0)
	for i := range 10 {
		r.Caller(t0.Add(time.Duration(i)*audio.FrameDuration), toneFrame)
	}
	// A little jitter is absorbed: this frame goes right after the others.
	r.Caller(t0.Add(300*time.Millisecond), toneFrame)
	// A long pause in the carrier's stream: the next frame is placed by the clock.
	r.Caller(t0.Add(2*time.Second), toneFrame)
	if err := r.Close(t0.Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	left, _ := channels(t, path)
	if !loud(left, 0, ms(220)) || !quiet(left, ms(220), ms(2000)) || !loud(left, ms(2000), ms(2020)) {
		t.Error("want 220 ms of caller audio back to back, then a frame at 2 s")
	}
}

func TestPCM16LegsAreRecordedAtTheirRate(t *testing.T) {
	f := audio.Format{Encoding: audio.PCM16, Rate: 16000}
	r, path, _ := newRecorder(t, f)
	r.Start(t0)
	pcm := audiotest.Tone(16000, 300, audio.FrameDuration, 0.5)
	frame := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(frame[2*i:], uint16(v))
	}
	r.Caller(t0, frame)
	if err := r.Close(t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	left, _ := channels(t, path)
	if len(left) != len(pcm) {
		t.Fatalf("%d samples, want %d", len(left), len(pcm))
	}
	for i := range pcm {
		if left[i] != pcm[i] {
			t.Fatalf("sample %d is %d, want %d", i, left[i], pcm[i])
		}
	}
}

func TestALongCallIsWrittenAsItGoesAndPlaysIfCutShort(t *testing.T) {
	r, path, _ := newRecorder(t, audio.Telephone)
	r.Start(t0)
	// 10 s in steps of 1 s, each waited for: the writer keeps a few seconds in hand, and
	// in a real call they take that long to come.
	for sec := range 10 {
		for i := range 50 {
			at := t0.Add(time.Duration(sec)*time.Second + time.Duration(i)*audio.FrameDuration)
			r.Caller(at, toneFrame)
			r.Agent(at, toneFrame)
		}
		if sec >= 1 {
			// A crash at any time leaves a header that matches what the file holds.
			waitWritten(t, path, ms(1000*sec-500))
		}
	}
	if err := r.Close(t0.Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	left, right := channels(t, path)
	if len(left) != ms(10000) || !loud(left, 0, len(left)) || !loud(right, 0, len(right)) {
		t.Errorf("want 10 s of both channels, got %d samples", len(left))
	}
}

func TestAWriteErrorStopsTheRecordingNotTheCall(t *testing.T) {
	r, path, j := newRecorder(t, audio.Telephone)
	r.Start(t0)
	_ = r.file.Close() // the disk is gone from under it
	for i := range 200 {
		r.Caller(t0.Add(time.Duration(i)*audio.FrameDuration), toneFrame)
	}
	_ = r.Close(t0.Add(5 * time.Second))
	r.Caller(t0.Add(6*time.Second), toneFrame) // after the end: ignored, no panic
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := obs.ReadFile(filepath.Join(filepath.Dir(path), "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	errorsSeen := 0
	for _, e := range evs {
		types = append(types, e.Type)
		if e.Type == obs.RecordingError {
			errorsSeen++
		}
	}
	if errorsSeen != 1 || types[0] != obs.RecordingStart {
		t.Errorf("journal %v: want recording.start and one recording.error", types)
	}
}

func TestTheJournalSaysWhereTheRecordingStartsAndHowLongItIs(t *testing.T) {
	r, path, j := newRecorder(t, audio.Telephone)
	r.Start(t0)
	for i := range 50 {
		r.Caller(t0.Add(time.Duration(i)*audio.FrameDuration), toneFrame)
	}
	if err := r.Close(t0.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_ = j.Close()
	evs, err := obs.ReadFile(filepath.Join(filepath.Dir(path), "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Type != obs.RecordingStart || evs[0].MS != 0 || evs[0].Name != FileName ||
		evs[1].Type != obs.RecordingStop || evs[1].AudioMS != 1000 {
		t.Errorf("journal %+v: want recording.start at 0 ms and recording.stop with audio_ms 1000", evs)
	}
}

func TestNewRefusesWhatItCannotRecord(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(Options{Path: filepath.Join(dir, "a.wav"), Format: audio.Format{Encoding: audio.Mulaw}}); err == nil {
		t.Error("a zero rate was accepted")
	}
	if _, err := New(Options{Path: filepath.Join(dir, "b.wav"), Format: audio.Format{Encoding: 9, Rate: 8000}}); err == nil {
		t.Error("an unknown encoding was accepted")
	}
	existing := filepath.Join(dir, "c.wav")
	_ = os.WriteFile(existing, []byte("x"), 0o600)
	if _, err := New(Options{Path: existing, Format: audio.Telephone}); !errors.Is(err, os.ErrExist) {
		t.Errorf("an existing file: %v, want it refused", err)
	}
}

func TestTheFramePathDoesNotAllocate(t *testing.T) {
	r, _, _ := newRecorder(t, audio.Telephone)
	r.Start(t0)
	defer r.Close(t0)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		at := t0.Add(time.Duration(i) * audio.FrameDuration)
		r.Caller(at, toneFrame)
		r.Agent(at, toneFrame)
		i++
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations a frame, want 0", allocs)
	}
}

func BenchmarkFrame(b *testing.B) {
	r, _, _ := newRecorder(b, audio.Telephone)
	r.Start(t0)
	defer r.Close(t0)
	b.ReportAllocs()
	b.SetBytes(int64(len(toneFrame)))
	i := 0
	for b.Loop() {
		r.Caller(t0.Add(time.Duration(i)*audio.FrameDuration), toneFrame)
		i++
	}
}

// waitWritten waits until the file's header says it holds at least samples per channel,
// and checks that the file holds what the header says.
func waitWritten(t *testing.T, path string, samples int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(b) >= headerSize {
			data := int(binary.LittleEndian.Uint32(b[40:]))
			if data > len(b)-headerSize {
				t.Fatalf("the header promises %d bytes, the file holds %d", data, len(b)-headerSize)
			}
			if data >= 4*samples {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the file does not reach %d samples while the call runs", samples)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestALawLegsAreDecoded(t *testing.T) {
	r, path, _ := newRecorder(t, audio.Format{Encoding: audio.Alaw, Rate: rate})
	r.Start(t0)
	pcm := audiotest.Tone(rate, 440, audio.FrameDuration, 0.5)
	frame := g711.EncodeAlaw(make([]byte, len(pcm)), pcm)
	r.Agent(t0.Add(100*time.Millisecond), frame)
	if err := r.Close(t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	left, right := channels(t, path)
	want := g711.DecodeAlaw(make([]int16, len(frame)), frame)
	// A-law has no code for 0: its silence decodes to ±8 (-72 dBFS).
	alawQuiet := func(pcm []int16) bool {
		return !slices.ContainsFunc(pcm, func(v int16) bool { return v > 8 || v < -8 })
	}
	if !alawQuiet(left) || !alawQuiet(right[:ms(100)]) || len(right) != ms(120) {
		t.Fatalf("want the frame alone at 100 ms on the agent's channel; %d samples", len(right))
	}
	for i, v := range want {
		if right[ms(100)+i] != v {
			t.Fatalf("sample %d is %d, want %d", i, right[ms(100)+i], v)
		}
	}
}
