//go:build embedded

package sphinx

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/resample"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
)

// requireModel ends the test when the model is not installed (a missing peer): the only
// reason a build with the tag may not recognise.
func requireModel(t testing.TB) {
	t.Helper()
	if err := CheckModel(DefaultModelDir); err != nil {
		testpeer.Missing(t, testpeer.SphinxEnUS, err)
	}
}

func newReal(t testing.TB, decoders int) *Recognizer {
	t.Helper()
	requireModel(t)
	r, err := New(Options{Decoders: decoders})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// flite speaks text with a flite voice and returns it at 16 kHz. flite is a test
// dependency that scripts/setup.sh installs.
func flite(t testing.TB, voiceName, text string) []int16 {
	t.Helper()
	bin := testpeer.Program(t, "flite", testpeer.Flite)
	path := filepath.Join(t.TempDir(), voiceName+".wav")
	if out, err := exec.Command(bin, "-voice", voiceName, "-t", text, "-o", path).CombinedOutput(); err != nil {
		t.Fatalf("flite -voice %s: %v: %s", voiceName, err, out)
	}
	f, b, err := wav.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Encoding != audio.PCM16 {
		t.Fatalf("flite wrote %v", f)
	}
	pcm := bytesPCM(b)
	if f.Rate != modelRate {
		rs, err := resample.New(f.Rate, modelRate)
		if err != nil {
			t.Fatal(err)
		}
		pcm = rs.Process(nil, pcm)
	}
	return pcm
}

func bytesPCM(b []byte) []int16 {
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(uint16(b[2*i]) | uint16(b[2*i+1])<<8)
	}
	return pcm
}

// telephone turns 16 kHz audio into what a carrier sends: 8 kHz mu-law.
func telephone(t testing.TB, pcm []int16) []byte {
	t.Helper()
	rs, err := resample.New(modelRate, 8000)
	if err != nil {
		t.Fatal(err)
	}
	narrow := rs.Process(nil, pcm)
	return g711.EncodeMulaw(make([]byte, len(narrow)), narrow)
}

// encode is 16 kHz audio in format f (16 kHz PCM16 or 8 kHz mu-law).
func encode(t testing.TB, f audio.Format, pcm []int16) []byte {
	t.Helper()
	switch f {
	case wide:
		return pcmBytes(pcm)
	case audio.Telephone:
		return telephone(t, pcm)
	}
	t.Fatalf("no encoder for %v", f)
	return nil
}

// heard is what a stream made of one utterance.
type heard struct {
	final    string
	partials []string
	latency  time.Duration // from Finalize to the Final
}

// transcribe streams pcm (16 kHz) to a new stream in format f the way the call engine
// does: 20 ms frames with half a second of silence around the speech, then Finalize once
// the stream has heard everything (as the engine's VAD would, after its hangover).
func transcribe(t testing.TB, r *Recognizer, f audio.Format, pcm []int16) heard {
	t.Helper()
	rs, err := r.Stream(context.Background(), f, voice.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := rs.(*stream)
	defer s.Close()
	b := encode(t, f, cat(quiet(500*time.Millisecond), pcm, quiet(500*time.Millisecond)))
	fb := f.FrameBytes()
	for len(b) > 0 {
		n := min(fb, len(b))
		if err := s.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	var h heard
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		idle := s.in.empty() && !s.busy.Load()
		s.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("stream did not keep up")
		}
		select {
		case tr := <-s.Results():
			h.partials = append(h.partials, tr.Text)
		case <-time.After(time.Millisecond):
		}
	}
	start := time.Now()
	if err := s.Finalize(); err != nil {
		t.Fatal(err)
	}
	for tr := range s.Results() {
		if tr.Final {
			h.final, h.latency = tr.Text, time.Since(start)
			break
		}
		h.partials = append(h.partials, tr.Text)
	}
	if d := s.st.droppedQueue.Load(); d > 0 {
		t.Errorf("dropped %v of audio", f.Duration(int(d)))
	}
	return h
}

// wer is the word error rate of hyp against ref: word-level edit distance over the
// reference's length.
func wer(ref, hyp string) (errs, n int) {
	r, h := strings.Fields(ref), strings.Fields(hyp)
	prev := make([]int, len(h)+1)
	cur := make([]int, len(h)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur[0] = i
		for j := 1; j <= len(h); j++ {
			sub := prev[j-1]
			if r[i-1] != h[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(h)], len(r)
}

// keywords counts how many of words hyp contains.
func keywords(hyp string, words ...string) int {
	have := map[string]bool{}
	for _, w := range strings.Fields(hyp) {
		have[w] = true
	}
	n := 0
	for _, w := range words {
		if have[w] {
			n++
		}
	}
	return n
}

func TestWERCounts(t *testing.T) {
	for _, c := range []struct {
		ref, hyp string
		errs     int
	}{
		{"a b c", "a b c", 0}, {"a b c", "a x c", 1}, {"a b c", "a c", 1}, {"a b c", "a b c d", 1}, {"a b", "", 2},
	} {
		if e, _ := wer(c.ref, c.hyp); e != c.errs {
			t.Errorf("wer(%q, %q) = %d, want %d", c.ref, c.hyp, e, c.errs)
		}
	}
}

func TestRecognizesFliteAtSixteenKilohertz(t *testing.T) {
	r := newReal(t, 1)
	const text = "please book a table for two at seven"
	h := transcribe(t, r, wide, flite(t, "slt", text))
	e, n := wer(text, h.final)
	t.Logf("flite slt 16 kHz: %q -> %q: WER %.0f%% (%d/%d), %d partials, Finalize->Final %v",
		text, h.final, 100*float64(e)/float64(n), e, n, len(h.partials), h.latency)
	if k := keywords(h.final, "book", "table", "seven"); k < 2 {
		t.Errorf("heard %q: want at least 2 of book, table, seven", h.final)
	}
	if len(h.partials) == 0 {
		t.Error("no partial transcripts")
	}
	if h.final != strings.ToLower(h.final) {
		t.Errorf("Final %q is not lower-case", h.final)
	}
}

// agentLines are what callers say to a voice agent (56 words), for WER over more than
// one sentence.
var agentLines = []string{
	"please book a table for two at seven",
	"what is the weather like in boston tomorrow",
	"i would like to cancel my appointment on friday",
	"transfer me to a human agent please",
	"my account number is four five six seven",
	"can you call me back in ten minutes",
	"yes that is correct",
	"no thank you goodbye",
}

func TestRecognizesFliteOverTheTelephone(t *testing.T) {
	r := newReal(t, 2)
	for _, c := range []struct {
		voice  string
		f      audio.Format
		maxWER float64
	}{
		{"slt", wide, 0.35},
		{"rms", wide, 0.35},
		{"rms", audio.Telephone, 0.5},
	} {
		var errs, words int
		var worst time.Duration
		for i, line := range agentLines {
			h := transcribe(t, r, c.f, flite(t, c.voice, line))
			e, n := wer(line, h.final)
			errs, words = errs+e, words+n
			worst = max(worst, h.latency)
			if i == 0 {
				k := keywords(h.final, "book", "table", "two", "seven")
				t.Logf("%s %v: %q -> %q (%d keywords)", c.voice, c.f, line, h.final, k)
				if k < 2 {
					t.Errorf("%s %v heard %q: want at least 2 of book, table, two, seven", c.voice, c.f, h.final)
				}
			}
		}
		w := float64(errs) / float64(words)
		t.Logf("flite %s, %v: WER %.1f%% (%d/%d words), slowest Finalize->Final %v", c.voice, c.f, 100*w, errs, words, worst)
		if w > c.maxWER {
			t.Errorf("flite %s, %v: WER %.1f%%, want at most %.0f%%", c.voice, c.f, 100*w, 100*c.maxWER)
		}
	}
}

// reference reads a Sphinx transcription file ("<s> words </s> (id)") into id -> words.
func reference(t testing.TB, path string) map[string]string {
	t.Helper()
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s missing: install the Debian package pocketsphinx-testdata (scripts/setup.sh does)", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	line := regexp.MustCompile(`^(.*)\(([^)]+)\)\s*$`)
	refs := map[string]string{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		refs[m[2]] = normalizeHyp(m[1])
	}
	return refs
}

func TestRecognizesRecordedSpeech(t *testing.T) {
	r := newReal(t, 2)
	dir := vadtest.SpeechDir()
	recs := vadtest.Recordings(t)
	refs := reference(t, filepath.Join(dir, "librivox", "transcription"))
	for k, v := range reference(t, filepath.Join(dir, "cards", "cards.transcription")) {
		refs[k] = v
	}
	// Words every decode of these recordings got right in our runs; each file must keep
	// at least one.
	keys := map[string][]string{
		"sense_and_sensibility_01_austen_64kb-0870": {"consider", "power", "much"},
		"sense_and_sensibility_01_austen_64kb-0880": {"young", "man"},
		"sense_and_sensibility_01_austen_64kb-0890": {"rather", "selfish"},
		"sense_and_sensibility_01_austen_64kb-0920": {"married", "woman", "respectable"},
		"sense_and_sensibility_01_austen_64kb-0930": {"might", "made", "even"},
	}
	for _, f := range []audio.Format{wide, audio.Telephone} {
		tally := map[string][2]int{}
		for _, rec := range recs {
			id := strings.TrimSuffix(filepath.Base(rec.Name), filepath.Ext(rec.Name))
			ref, ok := refs[id]
			if !ok {
				continue // goforward, numbers, something: no transcript shipped
			}
			set := "librivox"
			if strings.HasPrefix(rec.Name, "cards/") {
				set = "cards"
			}
			h := transcribe(t, r, f, rec.PCM)
			e, n := wer(ref, h.final)
			c := tally[set]
			tally[set] = [2]int{c[0] + e, c[1] + n}
			t.Logf("%v %s: WER %d/%d\n  ref %q\n  hyp %q", f, id, e, n, ref, h.final)
			if kw := keys[id]; kw != nil && f == wide && keywords(h.final, kw...) == 0 {
				t.Errorf("%s at 16 kHz: heard %q, want one of %v", id, h.final, kw)
			}
		}
		for set, c := range tally {
			w := float64(c[0]) / float64(c[1])
			t.Logf("%s, %v: WER %.1f%% (%d/%d words)", set, f, 100*w, c[0], c[1])
			limit := 0.45
			if f == audio.Telephone {
				limit = 0.75
			}
			if set == "librivox" && w > limit {
				t.Errorf("%s, %v: WER %.1f%%, want at most %.0f%%", set, f, 100*w, 100*limit)
			}
		}
	}
}

func TestTwoCallsShareOneDecoder(t *testing.T) {
	r := newReal(t, 1)
	lines := []string{"please book a table for two at seven", "what is the weather like in boston tomorrow"}
	streams := make([]*stream, 2)
	for i := range streams {
		rs, err := r.Stream(context.Background(), wide, voice.StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = rs.(*stream)
		defer streams[i].Close()
	}
	// Both callers speak at once, in real-time-sized frames; the second waits for the one
	// decoder, then decodes what it held.
	audios := [][]byte{pcmBytes(flite(t, "slt", lines[0])), pcmBytes(flite(t, "slt", lines[1]))}
	for len(audios[0])+len(audios[1]) > 0 {
		for i, s := range streams {
			n := min(wide.FrameBytes(), len(audios[i]))
			if n > 0 {
				_ = s.Write(audios[i][:n])
				audios[i] = audios[i][n:]
			}
		}
	}
	for _, s := range streams {
		_ = s.Finalize() // as the engine's VAD does at the end of each caller's speech
	}
	for i, s := range streams {
		var final string
		for tr := range s.Results() {
			if tr.Final {
				final = tr.Text
				break
			}
		}
		e, n := wer(lines[i], final)
		t.Logf("call %d: %q (WER %d/%d), waited %v", i, final, e, n, time.Duration(s.st.waited.Load()))
		if float64(e)/float64(n) > 0.5 {
			t.Errorf("call %d heard %q for %q", i, final, lines[i])
		}
	}
	if w := streams[0].st.waited.Load() + streams[1].st.waited.Load(); w == 0 {
		t.Error("neither call waited for the decoder")
	}
}

func TestNewRejectsABrokenModel(t *testing.T) {
	requireModel(t)
	// A directory with every file present, but an empty language model: CheckModel passes,
	// PocketSphinx refuses.
	dir := t.TempDir()
	for _, name := range []string{acousticDir, dictFile} {
		if err := os.Symlink(filepath.Join(DefaultModelDir, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, lmFile), []byte("not a language model"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{ModelDir: dir, Decoders: 2})
	if err == nil || !containsAll(err.Error(), "could not load the model", dir, "pocketsphinx-en-us") {
		t.Errorf("New on a broken model: %v", err)
	}
	_, err = New(Options{ModelDir: filepath.Join(dir, "nowhere")})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "apt-get install pocketsphinx-en-us") {
		t.Errorf("New without a model: %v", err)
	}
}

func TestEmbeddedBuildIsAvailable(t *testing.T) {
	if !Available() {
		t.Error("Available() = false in a build with the embedded tag")
	}
}

// phonePath is 16 kHz audio as the model gets it from a phone call: down to 8 kHz, mu-law
// and back, up-sampled.
func phonePath(t testing.TB, pcm []int16) []int16 {
	t.Helper()
	b := telephone(t, pcm)
	c, err := newConverter(audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	return append([]int16(nil), c.convert(b)...)
}

// decodeWith decodes pcm as one utterance on d from normalisation state st.
func decodeWith(t testing.TB, d decoder, st []float32, pcm []int16) (string, []float32) {
	t.Helper()
	if err := d.start(st); err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(pcm); off += frameSamples {
		if err := d.process(pcm[off:min(off+frameSamples, len(pcm))]); err != nil {
			t.Fatal(err)
		}
	}
	h, cmn, err := d.end()
	if err != nil {
		t.Fatal(err)
	}
	return normalizeHyp(h), cmn
}

// TestColdMeans checks, on recorded human speech that took no part in measuring them, that
// a first utterance decodes better from coldMeans than from the model's -cmninit. With
// HANDSET_SPHINX_REMEASURE=1 it first measures them again (about a minute): the mean
// cepstrum of flite voices awb, kal16 and slt speaking agentLines, at 16 kHz and through
// the phone, each utterance decoded from nothing accumulated.
func TestColdMeans(t *testing.T) {
	requireModel(t)
	dec, err := newDecoder(DefaultModelDir)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.close()
	d := dec.(*psDecoder)
	veclen := (len(d.initial) - 1) / 2
	fromInit := meanState(d.initial[:veclen])
	dir := vadtest.SpeechDir()
	recs := vadtest.Recordings(t)
	refs := reference(t, filepath.Join(dir, "librivox", "transcription"))
	for k, v := range reference(t, filepath.Join(dir, "cards", "cards.transcription")) {
		refs[k] = v
	}
	for _, rate := range []int{16000, 8000} {
		path := func(pcm []int16) []int16 { return pcm }
		if rate == 8000 {
			path = func(pcm []int16) []int16 { return phonePath(t, pcm) }
		}
		if os.Getenv("HANDSET_SPHINX_REMEASURE") == "1" {
			sum := make([]float64, veclen)
			n := 0
			for _, v := range []string{"awb", "kal16", "slt"} {
				for _, line := range agentLines {
					_, st := decodeWith(t, d, fromInit, path(flite(t, v, line)))
					for i := range veclen {
						sum[i] += float64(st[i])
					}
					n++
				}
			}
			parts := make([]string, veclen)
			for i := range sum {
				parts[i] = strconv.FormatFloat(sum[i]/float64(n), 'f', 2, 32)
				if diff := sum[i]/float64(n) - float64(coldMeans[rate][i]); diff > 1 || diff < -1 {
					t.Errorf("%d Hz: cepstrum %d has mean %s, coldMeans says %.2f", rate, i, parts[i], coldMeans[rate][i])
				}
			}
			t.Logf("%d Hz: measured %s", rate, strings.Join(parts, ", "))
		}
		var errsCold, errsInit, words int
		for _, rec := range recs {
			id := strings.TrimSuffix(filepath.Base(rec.Name), filepath.Ext(rec.Name))
			ref, ok := refs[id]
			if !ok {
				continue
			}
			pcm := path(rec.PCM)
			h, _ := decodeWith(t, d, coldPriors()[rate], pcm)
			e, w := wer(ref, h)
			errsCold, words = errsCold+e, words+w
			h, _ = decodeWith(t, d, fromInit, pcm)
			e, _ = wer(ref, h)
			errsInit += e
		}
		pct := func(e int) float64 { return 100 * float64(e) / float64(words) }
		t.Logf("%d Hz, first utterances (cold) of recorded speech: WER %.1f%% from coldMeans, %.1f%% from -cmninit (%d words)",
			rate, pct(errsCold), pct(errsInit), words)
		if errsCold >= errsInit {
			t.Errorf("%d Hz: coldMeans do not help a first utterance", rate)
		}
	}
}
