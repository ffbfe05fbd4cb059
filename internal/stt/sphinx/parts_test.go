package sphinx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/testpeer"
)

func TestInboxDropsOldestAndKeepsMarks(t *testing.T) {
	q := newInbox(10, 2)
	if d := q.push([]byte("abcdef")); d != 0 {
		t.Fatalf("dropped %d", d)
	}
	q.mark() // after "abcdef"
	if d := q.push([]byte("ghijkl")); d != 2 {
		t.Fatalf("dropped %d, want 2", d)
	}
	buf := make([]byte, 100)
	n, fin := q.take(buf)
	if fin || string(buf[:n]) != "cdef" {
		t.Fatalf("take = %q, %v: want the audio before the mark, oldest dropped", buf[:n], fin)
	}
	if n, fin := q.take(buf); n != 0 || !fin {
		t.Fatalf("take = %d, %v: want the mark", n, fin)
	}
	if n, fin := q.take(buf[:4]); fin || string(buf[:n]) != "ghij" {
		t.Fatalf("take = %q, %v", buf[:n], fin)
	}
	// A push larger than the queue keeps its newest bytes; a mark whose audio was dropped
	// comes out first.
	q.mark()
	if d := q.push([]byte("0123456789ABCD")); d != 2+4 {
		t.Fatalf("dropped %d, want 6", d)
	}
	if n, fin := q.take(buf); n != 0 || !fin {
		t.Fatalf("take = %d, %v: want the mark whose audio was dropped", n, fin)
	}
	if n, _ := q.take(buf); string(buf[:n]) != "456789ABCD" {
		t.Fatalf("take = %q", buf[:n])
	}
	if !q.empty() {
		t.Fatal("not empty")
	}
	// Drops never split a sample.
	q = newInbox(4, 2)
	q.push([]byte("ab"))
	if d := q.push([]byte("cde")); d != 2 {
		t.Fatalf("dropped %d, want a whole sample (2)", d)
	}
}

func TestSamplesQueue(t *testing.T) {
	var q samples
	for i := range 100 {
		q.push([]int16{int16(i)})
		q.keepLast(3)
	}
	if got := q.all(); !slices.Equal(got, []int16{97, 98, 99}) {
		t.Fatalf("all = %v", got)
	}
	if d := q.keepLast(1); d != 2 || q.len() != 1 {
		t.Fatalf("keepLast dropped %d, len %d", d, q.len())
	}
	q.reset()
	if q.len() != 0 {
		t.Fatal("reset left samples")
	}
}

func TestGateLevel(t *testing.T) {
	g := newGate(-50)
	cases := []struct {
		name  string
		frame []int16
		loud  bool
	}{
		{"silence", quiet(20 * time.Millisecond), false},
		{"-56 dBFS", hiss(20*time.Millisecond, 50), false},
		{"-44 dBFS", hiss(20*time.Millisecond, 200), true},
		{"speech", loud(20 * time.Millisecond), true},
		{"DC offset of -12 dBFS", slices.Repeat([]int16{8000}, 320), false},
		{"-56 dBFS on a DC offset", addDC(hiss(20*time.Millisecond, 50), -3000), false},
		{"empty", nil, false},
	}
	for _, c := range cases {
		if got := g.loud(c.frame); got != c.loud {
			t.Errorf("%s: loud = %v, want %v", c.name, got, c.loud)
		}
	}
}

func addDC(pcm []int16, dc int16) []int16 {
	for i := range pcm {
		pcm[i] += dc
	}
	return pcm
}

func TestNormalizeHyp(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "",
		"<s> HELLO <sil> World(2) </s>":       "hello world",
		"book a [NOISE] table ++BREATH++ two": "book a table two",
		"  read(3)   it ":                     "read it",
		"(weird) x(y":                         "(weird) x(y",
	} {
		if got := normalizeHyp(in); got != want {
			t.Errorf("normalizeHyp(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConverterJoinsSplitSamples(t *testing.T) {
	c, err := newConverter(wide)
	if err != nil {
		t.Fatal(err)
	}
	b := pcmBytes([]int16{1, -2, 300, -32768})
	var got []int16
	for _, part := range [][]byte{b[:1], b[1:4], b[4:5], {}, b[5:]} {
		got = append(got, c.convert(part)...)
	}
	if !slices.Equal(got, []int16{1, -2, 300, -32768}) {
		t.Fatalf("got %v", got)
	}
}

func TestOptionsDefaults(t *testing.T) {
	var o Options
	if err := o.setDefaults(); err != nil {
		t.Fatal(err)
	}
	if o.ModelDir != DefaultModelDir || o.Decoders != DefaultDecoders || o.Logger == nil {
		t.Errorf("defaults %+v", o)
	}
	o = Options{Decoders: -1}
	if err := o.setDefaults(); err == nil || !strings.Contains(err.Error(), "-1 decoders") {
		t.Errorf("Decoders -1: %v", err)
	}
	if _, err := New(Options{Decoders: -1}); err == nil {
		t.Error("New accepted -1 decoders")
	}
	d := defaultTuning()
	if d.gateDBFS != -50 || d.preRoll != 300*time.Millisecond || d.quiet != 2*time.Second ||
		d.maxUtterance != 30*time.Second || d.maxWait != 10*time.Second || d.partialEvery != 100*time.Millisecond {
		t.Errorf("default tuning %+v differs from the documented one", d)
	}
	if r := newRecognizer(Options{Logger: testLogger(t)}, nil, nil, d); r.Name() != "sphinx" {
		t.Errorf("Name = %q", r.Name())
	}
}

// fakeModel writes an empty file for each part of the model into a new directory.
func fakeModel(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, acousticDir), 0o755); err != nil {
		t.Fatal(err)
	}
	files := []string{lmFile, dictFile, filepath.Join(acousticDir, "sendump")}
	for _, f := range acousticFiles {
		files = append(files, filepath.Join(acousticDir, f))
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheckModel(t *testing.T) {
	dir := fakeModel(t)
	if err := CheckModel(dir); err != nil {
		t.Fatalf("complete model: %v", err)
	}
	install := "apt-get install pocketsphinx-en-us"

	missing := filepath.Join(t.TempDir(), "nowhere")
	err := CheckModel(missing)
	if !errors.Is(err, fs.ErrNotExist) || !containsAll(err.Error(), missing, "does not exist", install) {
		t.Errorf("missing directory: %v", err)
	}

	for _, rm := range []string{lmFile, dictFile, "en-us/mdef", "en-us/feat.params"} {
		dir := fakeModel(t)
		if err := os.Remove(filepath.Join(dir, rm)); err != nil {
			t.Fatal(err)
		}
		err := CheckModel(dir)
		if !errors.Is(err, fs.ErrNotExist) || !containsAll(err.Error(), "missing "+rm+":", dir, install) {
			t.Errorf("without %s: %v, want the file named alone and the package", rm, err)
		}
	}

	dir = fakeModel(t)
	_ = os.Remove(filepath.Join(dir, "en-us", "sendump"))
	if err := CheckModel(dir); !containsAll(errText(err), "en-us/sendump (or mixture_weights)") {
		t.Errorf("without mixture weights: %v", err)
	}
	_ = os.WriteFile(filepath.Join(dir, "en-us", "mixture_weights"), nil, 0o644)
	if err := CheckModel(dir); err != nil {
		t.Errorf("mixture_weights instead of sendump: %v", err)
	}

	dir = fakeModel(t)
	_ = os.RemoveAll(filepath.Join(dir, "en-us"))
	_ = os.Remove(filepath.Join(dir, lmFile))
	if err := CheckModel(dir); !containsAll(errText(err), "missing en-us/, en-us.lm.bin:") {
		t.Errorf("without the acoustic model and LM: %v", err)
	}

	file := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(file, nil, 0o644)
	if err := CheckModel(file); !containsAll(errText(err), "not a directory", install) {
		t.Errorf("a file as the directory: %v", err)
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestCheckModelInstalled(t *testing.T) {
	testpeer.File(t, DefaultModelDir, testpeer.SphinxEnUS)
	if err := CheckModel(""); err != nil {
		t.Errorf("CheckModel(DefaultModelDir): %v", err)
	}
}

func TestTelephoneConverterFrameSizes(t *testing.T) {
	c, err := newConverter(audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for range 50 {
		total += len(c.convert(make([]byte, 160)))
	}
	if total != modelRate {
		t.Errorf("1 s of 8 kHz gave %d samples, want %d", total, modelRate)
	}
}
