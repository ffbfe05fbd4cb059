package vadtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/testpeer"
)

// Candidate is a detector under evaluation.
type Candidate struct {
	Name string
	// New returns a fresh detector at rate Hz (8000 or 16000) and a function that frees it.
	New func(rate int) (vad.Detector, func(), error)
	// Lags returns the detector's designed start and end lags at rate Hz.
	Lags func(rate int) Lags
}

var (
	trackOnce sync.Once
	track     Track
	trackErr  error

	degradedMu sync.Mutex
	degraded   = map[Condition]Track{}
)

// SpeechTrack is the clean 16 kHz track built from the recordings in SpeechDir (about 64 s,
// 13 utterances), built once per test binary. Missing recordings are a missing peer
// (testpeer.Speech); an unreadable one fails t.
func SpeechTrack(t testing.TB) Track {
	t.Helper()
	trackOnce.Do(func() {
		recs, err := LoadRecordings(SpeechDir())
		if err != nil {
			trackErr = err
			return
		}
		track = BuildTrack(recs)
	})
	endOnError(t, trackErr)
	return track
}

// Recordings are the recordings in SpeechDir. Missing ones are a missing peer
// (testpeer.Speech); an unreadable one fails t.
func Recordings(t testing.TB) []Recording {
	t.Helper()
	recs, err := LoadRecordings(SpeechDir())
	endOnError(t, err)
	return recs
}

// endOnError ends t when loading the recordings failed: through testpeer when they are
// not installed.
func endOnError(t testing.TB, err error) {
	t.Helper()
	switch {
	case errors.Is(err, os.ErrNotExist):
		testpeer.Missing(t, testpeer.Speech, err)
	case err != nil:
		t.Fatal(err)
	}
}

// Degraded is SpeechTrack under c, built once per test binary.
func Degraded(t testing.TB, c Condition) Track {
	t.Helper()
	clean := SpeechTrack(t)
	degradedMu.Lock()
	defer degradedMu.Unlock()
	if tr, ok := degraded[c]; ok {
		return tr
	}
	tr, err := clean.Apply(c)
	if err != nil {
		t.Fatal(err)
	}
	degraded[c] = tr
	return tr
}

// Evaluate runs a fresh detector from c over SpeechTrack under each condition, logs the
// table and returns the results in the order of conds.
func Evaluate(t testing.TB, c Candidate, conds []Condition) []Result {
	t.Helper()
	results := make([]Result, 0, len(conds))
	for _, cond := range conds {
		tr := Degraded(t, cond)
		d, free, err := c.New(tr.Rate)
		if err != nil {
			t.Fatalf("%s at %d Hz: %v", c.Name, tr.Rate, err)
		}
		res, err := Run(d, tr, c.Lags(tr.Rate))
		free()
		if err != nil {
			t.Fatalf("%s, %v: %v", c.Name, cond, err)
		}
		res.Condition = cond
		results = append(results, res)
	}
	t.Logf("\n%s", Table(c.Name, results))
	return results
}

// Floors are the least a detector must achieve on clean speech.
type Floors struct {
	RawF1, SegmentF1 float64
	// AllDetected asks for every utterance found and no false start.
	AllDetected bool
}

// CheckClean fails t when a clean-condition result in results misses floors.
func CheckClean(t testing.TB, name string, results []Result, f Floors) {
	t.Helper()
	for _, r := range results {
		if r.Condition.Noise != Clean {
			continue
		}
		if r.HasRaw && r.Raw.F1() < f.RawF1 {
			t.Errorf("%s, %v: raw frame F1 %.3f, want >= %.2f", name, r.Condition, r.Raw.F1(), f.RawF1)
		}
		if r.Segment.F1() < f.SegmentF1 {
			t.Errorf("%s, %v: segment F1 %.3f, want >= %.2f", name, r.Condition, r.Segment.F1(), f.SegmentF1)
		}
		if f.AllDetected && (r.Detected != r.Utterances || r.FalseStarts != 0) {
			t.Errorf("%s, %v: %d of %d utterances detected, %d false starts; want all and none",
				name, r.Condition, r.Detected, r.Utterances, r.FalseStarts)
		}
	}
}

// EnginesDir is the directory holding the embedded engines' files: $HANDSET_ENGINES_DIR
// when set, otherwise .cache/engines in the module root (the directory holding go.mod,
// found by walking up from the working directory).
func EnginesDir() (string, error) {
	if d := os.Getenv("HANDSET_ENGINES_DIR"); d != "" {
		return d, nil
	}
	root, err := testpeer.ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("vadtest: %w; set HANDSET_ENGINES_DIR", err)
	}
	return filepath.Join(root, ".cache", "engines"), nil
}

// EngineFile is the path of the engine file name (for example "fvad.wasm") in EnginesDir.
// A missing file is a missing peer (testpeer.Engines; HANDSET_ENGINES_DIR may name another
// directory holding it).
func EngineFile(t testing.TB, name string) string {
	t.Helper()
	dir, err := EnginesDir()
	if err != nil {
		t.Fatal(err)
	}
	return testpeer.File(t, filepath.Join(dir, name), testpeer.Engines)
}
