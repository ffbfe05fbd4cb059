package espeak

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const sentence = "Please book a table for two at seven."

// long is about three minutes of speech.
var long = strings.Repeat("I would like to cancel my appointment on Friday, and book a new one. ", 40)

// needEspeak is a Synthesizer running espeak-ng; without espeak-ng installed it is a
// missing peer.
func needEspeak(t testing.TB) *Synthesizer {
	t.Helper()
	testpeer.Program(t, DefaultBinary, testpeer.Espeak)
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func decode(t testing.TB, f audio.Format, b []byte) []int16 {
	t.Helper()
	switch f.Encoding {
	case audio.PCM16:
		pcm := make([]int16, len(b)/2)
		for i := range pcm {
			pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
		}
		return pcm
	case audio.Mulaw:
		return g711.DecodeMulaw(make([]int16, len(b)), b)
	case audio.Alaw:
		return g711.DecodeAlaw(make([]int16, len(b)), b)
	}
	t.Fatalf("encoding %v", f.Encoding)
	return nil
}

// speechLevel is the RMS level of the 20 ms frames above -50 dBFS, and how long they last.
func speechLevel(pcm []int16, rate int) (float64, time.Duration) {
	frame := rate / 50
	var loud []int16
	for i := 0; i+frame <= len(pcm); i += frame {
		if audiotest.RMSDBFS(pcm[i:i+frame]) > -50 {
			loud = append(loud, pcm[i:i+frame]...)
		}
	}
	return audiotest.RMSDBFS(loud), time.Duration(len(loud)) * time.Second / time.Duration(rate)
}

func readAll(t testing.TB, s *Synthesizer, text string, f audio.Format) []byte {
	t.Helper()
	r, err := s.Synthesize(context.Background(), text, f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%v: %v", f, err)
	}
	return b
}

func TestRealEspeakOutput(t *testing.T) {
	s := needEspeak(t)
	if s.Name() != "espeak" {
		t.Errorf("Name() = %q", s.Name())
	}
	var first time.Duration
	for _, f := range []audio.Format{
		audio.Telephone,
		{Encoding: audio.PCM16, Rate: 16000},
		{Encoding: audio.Alaw, Rate: 8000},
		{Encoding: audio.PCM16, Rate: 24000},
		{Encoding: audio.PCM16, Rate: 48000},
	} {
		b := readAll(t, s, sentence, f)
		d := f.Duration(len(b))
		pcm := decode(t, f, b)
		level, voiced := speechLevel(pcm, f.Rate)
		t.Logf("%v: %v of audio, %v voiced at %.1f dBFS", f, d, voiced, level)
		// Eight words at 160 words per minute, plus espeak-ng's closing pause.
		if d < 2*time.Second || d > 5*time.Second {
			t.Errorf("%v: %v of audio for %q", f, d, sentence)
		}
		if voiced < d/3 {
			t.Errorf("%v: only %v of %v above -50 dBFS", f, voiced, d)
		}
		if level < -35 || level > -6 {
			t.Errorf("%v: speech at %.1f dBFS, want -35 to -6", f, level)
		}
		if first == 0 {
			first = d
		} else if diff := (d - first).Abs(); diff > 5*time.Millisecond {
			t.Errorf("%v: %v of audio, %v at 8 kHz", f, d, first)
		}
		// espeak-ng's 22050 Hz has nothing above 11025 Hz; resampling must put no images there.
		if f.Rate == 48000 {
			if hi := audiotest.ToneLevelDB(pcm, f.Rate, 15000); hi > level-50 {
				t.Errorf("%v: %.1f dBFS at 15 kHz against speech at %.1f", f, hi, level)
			}
		}
	}
}

func TestFasterSpeedIsShorter(t *testing.T) {
	needEspeak(t)
	slow, err := New(Options{Speed: 120})
	if err != nil {
		t.Fatal(err)
	}
	fast, err := New(Options{Speed: 300})
	if err != nil {
		t.Fatal(err)
	}
	a := len(readAll(t, slow, sentence, audio.Telephone))
	b := len(readAll(t, fast, sentence, audio.Telephone))
	if b >= a*3/4 {
		t.Errorf("300 words per minute gave %d bytes, 120 gave %d", b, a)
	}
}

// procState is the state letter of process pid ("R", "S", "Z"...), "" once it is gone.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// pid (comm) state ...; comm may hold spaces, so look after the last ')'.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return fields[0]
}

func TestStopKillsAndReapsEspeak(t *testing.T) {
	s := needEspeak(t)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc") // not a peer: a platform without /proc
	}
	for _, how := range []string{"close", "cancel"} {
		ctx, cancel := context.WithCancel(context.Background())
		r, err := s.Synthesize(ctx, long, audio.Telephone)
		if err != nil {
			t.Fatal(err)
		}
		pid := r.(*stream).cmd.Process.Pid
		if _, err := io.ReadFull(r, make([]byte, 8000)); err != nil { // 1 s
			t.Fatal(err)
		}
		// espeak-ng is ahead of us, blocked writing into the full pipe.
		if st := procState(pid); st == "" || st == "Z" {
			t.Fatalf("%s: espeak-ng in state %q before it was stopped", how, st)
		}
		if how == "close" {
			r.Close()
			// Close has reaped it already.
			if st := procState(pid); st != "" {
				t.Errorf("after Close, espeak-ng (pid %d) is in state %q; want it gone", pid, st)
			}
		} else {
			cancel()
			// Reaped on its own goroutine: wait for it (the deadline is a safety net).
			deadline := time.Now().Add(30 * time.Second)
			for procState(pid) != "" && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if st := procState(pid); st != "" {
				t.Errorf("after cancel, espeak-ng (pid %d) is in state %q; want it gone", pid, st)
			}
			_, err := io.ReadAll(r)
			if voice.KindOf(err) != voice.KindCanceled {
				t.Errorf("Read after cancel: %v, want KindCanceled", err)
			}
			r.Close()
		}
		if _, err := r.Read(make([]byte, 10)); err == nil {
			t.Errorf("%s: Read after Close succeeded", how)
		}
		cancel()
	}
}

func TestMissingBinarySaysHowToInstall(t *testing.T) {
	for _, bin := range []string{"espeak-ng-is-not-here", filepath.Join(t.TempDir(), "espeak-ng")} {
		_, err := New(Options{Binary: bin})
		if err == nil || !strings.Contains(err.Error(), "apt-get install espeak-ng") {
			t.Errorf("New(%q): %v, want the install hint", bin, err)
		}
	}
}

func TestOptionsAreChecked(t *testing.T) {
	needEspeak(t)
	for _, o := range []Options{{Voice: "-w/tmp/x"}, {Voice: "en us"}, {Speed: 20}, {Speed: 1000}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// script writes an executable shell script into dir and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh") // not a peer: a platform without a POSIX shell
	}
	path := filepath.Join(t.TempDir(), "fake-espeak")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFailingBinaryIsProviderError(t *testing.T) {
	bin := script(t, "cat >/dev/null\necho 'espeak-ng: starting' >&2\necho 'Error: no such voice, sorry' >&2\nexit 1\n")
	s, err := New(Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Synthesize(context.Background(), "hello", audio.Telephone)
	var pe *voice.ProviderError
	if !errors.As(err, &pe) || pe.Provider != "espeak" {
		t.Fatalf("err = %v, want an espeak ProviderError", err)
	}
	for _, want := range []string{"status 1", "Error: no such voice, sorry"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// fakeWAV is what espeak-ng writes: placeholder sizes, then n samples of a ramp.
func fakeWAV(rate, n int) []byte {
	b := []byte("RIFF")
	b = binary.LittleEndian.AppendUint32(b, 0x7ffff024)
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	b = binary.LittleEndian.AppendUint32(b, uint32(2*rate))
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, 0x7ffff000)
	for i := range n {
		b = binary.LittleEndian.AppendUint16(b, uint16(int16(i%2000-1000)))
	}
	return b
}

func TestFailureAfterAudioIsProviderError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "out.wav"), fakeWAV(22050, 22050), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := script(t, fmt.Sprintf("cat >/dev/null\ncat %q\necho 'Error: ran out of something' >&2\nexit 3\n", filepath.Join(dir, "out.wav")))
	s, err := New(Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Synthesize(context.Background(), "hello", audio.Format{Encoding: audio.PCM16, Rate: 22050})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if len(b) != 2*22050 {
		t.Errorf("%d bytes of audio before the failure, want %d", len(b), 2*22050)
	}
	if !bytes.Equal(b, fakeWAV(22050, 22050)[44:]) {
		t.Error("22050 Hz PCM did not pass through unchanged")
	}
	var pe *voice.ProviderError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "status 3") || !strings.Contains(err.Error(), "ran out of something") {
		t.Errorf("err = %v, want a ProviderError with the exit status and stderr's last line", err)
	}
}

func TestTextGoesOnStdinNeverArguments(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "out.wav"), fakeWAV(22050, 2205), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := script(t, fmt.Sprintf("cat > %q\nfor a in \"$@\"; do echo \"$a\"; done > %q\ncat %q\n",
		filepath.Join(dir, "stdin"), filepath.Join(dir, "args"), filepath.Join(dir, "out.wav")))
	s, err := New(Options{Binary: bin, Voice: "en-gb+f2", Speed: 200})
	if err != nil {
		t.Fatal(err)
	}
	text := "--help -w /tmp/evil $(touch /tmp/pwned) `id`; \"quoted\"\nsecond line -v xx"
	b := readAll(t, s, text, audio.Telephone)
	if want := 2205 * 8000 / 22050; len(b) < want-2 || len(b) > want+2 {
		t.Errorf("%d bytes at 8 kHz from 2205 samples at 22050 Hz", len(b))
	}
	stdin, _ := os.ReadFile(filepath.Join(dir, "stdin"))
	if string(stdin) != text+"\n" {
		t.Errorf("stdin = %q, want the text and a newline", stdin)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	if want := "--stdout\n--stdin\n-b\n1\n-v\nen-gb+f2\n-s\n200\n"; string(args) != want {
		t.Errorf("arguments:\n%s\nwant:\n%s", args, want)
	}
}

func TestNothingToSay(t *testing.T) {
	// espeak-ng writes nothing at all for empty input; that is an empty stream, not an error.
	bin := script(t, "cat >/dev/null\n")
	s, err := New(Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"", "  \n\t", "x"} {
		b := readAll(t, s, text, audio.Telephone)
		if len(b) != 0 {
			t.Errorf("%q: %d bytes", text, len(b))
		}
	}
}

func TestBadFormatIsBadInput(t *testing.T) {
	s, err := New(Options{Binary: script(t, "exit 0\n")})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []audio.Format{{Encoding: 0, Rate: 8000}, {Encoding: audio.PCM16, Rate: 11025}} {
		_, err := s.Synthesize(context.Background(), "hello", f)
		var pe *voice.ProviderError
		if !errors.As(err, &pe) || pe.Kind != voice.KindBadInput {
			t.Errorf("%v: %v, want KindBadInput", f, err)
		}
	}
}

func TestWAVHeader(t *testing.T) {
	good := fakeWAV(22050, 0)
	withList := append(append([]byte{}, good[:36]...), "LIST\x05\x00\x00\x00abcde\x00"...)
	withList = append(withList, good[36:]...)
	for _, c := range []struct {
		name string
		in   []byte
		rate int
		err  string
	}{
		{"espeak", good, 22050, ""},
		{"mbrola", fakeWAV(16000, 0), 16000, ""},
		{"extra chunk", withList, 22050, ""},
		{"empty", nil, 0, "EOF"},
		{"short", good[:7], 0, "cut short"},
		{"not wav", []byte("ID3\x04 this is an mp3 file.."), 0, "not RIFF"},
		{"no data", good[:36], 0, "before its data"},
		{"stereo", bytes.Replace(good, []byte{1, 0, 1, 0}, []byte{1, 0, 2, 0}, 1), 0, "2 channels"},
	} {
		w := wavReader{r: bytes.NewReader(c.in)}
		rate, err := w.header()
		switch {
		case c.err == "" && (err != nil || rate != c.rate):
			t.Errorf("%s: %d Hz, %v; want %d Hz", c.name, rate, err, c.rate)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.err)
		}
	}
}

// BenchmarkEspeak measures the time from Synthesize to the first audio of a two-sentence
// reply, process start included, and the real-time factor of the whole reply.
func BenchmarkEspeak(b *testing.B) {
	const reply = "Sure, I can help with that. What is the weather like in Boston tomorrow, and at what time?"
	s := needEspeak(b)
	for _, f := range []audio.Format{audio.Telephone, {Encoding: audio.PCM16, Rate: 16000}} {
		b.Run(f.String(), func(b *testing.B) {
			buf := make([]byte, 64<<10)
			var first, whole, played time.Duration
			for b.Loop() {
				start := time.Now()
				r, err := s.Synthesize(context.Background(), reply, f)
				if err != nil {
					b.Fatal(err)
				}
				n, err := r.Read(buf)
				first += time.Since(start)
				total := n
				for err == nil {
					n, err = r.Read(buf)
					total += n
				}
				whole += time.Since(start)
				played += f.Duration(total)
				r.Close()
			}
			b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ms-first-audio")
			b.ReportMetric(whole.Seconds()/played.Seconds(), "rtf")
		})
	}
}
