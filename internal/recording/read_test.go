package recording

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// recordCall writes a 2 s recording of call id under dataDir: the caller speaks the first
// second, the agent the second.
func recordCall(t *testing.T, dataDir, id string) string {
	t.Helper()
	if err := os.MkdirAll(obs.Dir(dataDir, id), 0o750); err != nil {
		t.Fatal(err)
	}
	path, err := PathOf(dataDir, id)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Path: path, Format: audio.Telephone})
	if err != nil {
		t.Fatal(err)
	}
	r.Start(t0)
	for i := range 100 {
		at := t0.Add(time.Duration(i) * audio.FrameDuration)
		if i < 50 {
			r.Caller(at, toneFrame)
		} else {
			r.Agent(at, toneFrame)
		}
	}
	if err := r.Close(t0.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWaveformShowsWhoSpokeWhen(t *testing.T) {
	dir := t.TempDir()
	recordCall(t, dir, "c1")
	w, err := Recordings{DataDir: dir}.Waveform(store.Call{ID: "c1"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if w.Duration != 2*time.Second || len(w.Caller) != 4 || len(w.Agent) != 4 {
		t.Fatalf("waveform %v with %d/%d buckets, want 2 s in 4", w.Duration, len(w.Caller), len(w.Agent))
	}
	for b := range 4 {
		callerTurn := b < 2
		if (w.Caller[b] > 0.3) != callerTurn || (w.Agent[b] > 0.3) != !callerTurn {
			t.Errorf("bucket %d: caller %.2f agent %.2f", b, w.Caller[b], w.Agent[b])
		}
		if w.Caller[b] > 1 || w.Agent[b] > 1 {
			t.Errorf("bucket %d: a level above 1", b)
		}
	}
}

func TestWaveformReadsAFileCutShort(t *testing.T) {
	dir := t.TempDir()
	path := recordCall(t, dir, "c1")
	// A crash between a flush's data and its header: the header promises more.
	if err := os.Truncate(path, int64(headerSize+4*ms(1500))); err != nil {
		t.Fatal(err)
	}
	w, err := ReadWaveform(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	if w.Duration != 1500*time.Millisecond || w.Caller[0] < 0.3 || w.Agent[2] < 0.3 {
		t.Errorf("waveform of the cut file: %+v", w)
	}
}

func TestWaveformRefusesBadRequests(t *testing.T) {
	dir := t.TempDir()
	path := recordCall(t, dir, "c1")
	for _, n := range []int{0, -1, MaxBuckets + 1} {
		if _, err := ReadWaveform(path, n); err == nil {
			t.Errorf("%d buckets accepted", n)
		}
	}
	other := filepath.Join(dir, "other.wav")
	_ = os.WriteFile(other, []byte("RIFF\x00\x00\x00\x00WAVEjunk"), 0o600)
	if _, err := ReadWaveform(other, 10); err == nil {
		t.Error("a file that is not a recording was read")
	}
	rs := Recordings{DataDir: dir}
	if _, err := rs.Waveform(store.Call{ID: "none"}, 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a call without a recording: %v, want os.ErrNotExist", err)
	}
	if _, _, err := rs.Open(store.Call{ID: "none"}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("opening a call without a recording: %v, want os.ErrNotExist", err)
	}
	for _, id := range []string{"", ".", "..", "../c1", "a/b", `a\b`} {
		if _, _, err := rs.Open(store.Call{ID: voice.CallID(id)}); err == nil {
			t.Errorf("call id %q opened a file", id)
		}
	}
}

func TestOpenPlaysTheRecording(t *testing.T) {
	dir := t.TempDir()
	recordCall(t, dir, "c1")
	f, mod, err := Recordings{DataDir: dir}.Open(store.Call{ID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rate, err := readHeader(f)
	if err != nil || rate != 8000 || mod.IsZero() {
		t.Errorf("opened recording: rate %d, modified %v, %v", rate, mod, err)
	}
}

func TestSweepDeletesOnlyOldRecordings(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old, fresh := recordCall(t, dir, "old"), recordCall(t, dir, "fresh")
	if err := os.Chtimes(old, now.Add(-31*24*time.Hour), now.Add(-31*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(fresh, now.Add(-29*24*time.Hour), now.Add(-29*24*time.Hour))
	journal := filepath.Join(obs.Dir(dir, "old"), "events.jsonl")
	_ = os.WriteFile(journal, []byte("{}\n"), 0o600)
	_ = os.Chtimes(journal, now.Add(-60*24*time.Hour), now.Add(-60*24*time.Hour))

	if n, err := Sweep(dir, 0, now); n != 0 || err != nil {
		t.Fatalf("retention 0 deleted %d (%v): it keeps everything", n, err)
	}
	n, err := Sweep(dir, 30*24*time.Hour, now)
	if err != nil || n != 1 {
		t.Fatalf("deleted %d (%v), want 1", n, err)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Error("the old recording is still there")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("the recent recording was deleted")
	}
	if _, err := os.Stat(journal); err != nil {
		t.Error("the sweep deleted the journal: only recordings go")
	}
	if n, err := Sweep(t.TempDir(), time.Hour, now); n != 0 || err != nil {
		t.Errorf("a data dir without calls: %d, %v", n, err)
	}
}

// BenchmarkWaveform reads an hour-long recording's waveform (8 kHz): the dashboard's cost of
// drawing the longest call.
func BenchmarkWaveform(b *testing.B) {
	path := filepath.Join(b.TempDir(), FileName)
	frames := int64(3600 * rate)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(header(rate, uint32(4*frames))); err != nil {
		b.Fatal(err)
	}
	if err := f.Truncate(headerSize + 4*frames); err != nil { // an hour of silence, sparse
		b.Fatal(err)
	}
	_ = f.Close()
	b.SetBytes(4 * frames)
	for b.Loop() {
		if _, err := ReadWaveform(path, 1000); err != nil {
			b.Fatal(err)
		}
	}
}
