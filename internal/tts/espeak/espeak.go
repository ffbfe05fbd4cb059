package espeak

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/handset-voice/handset/internal/audio/transcode"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/voice"
)

// Defaults for Options.
const (
	DefaultBinary = "espeak-ng"
	DefaultVoice  = "en-us"
	DefaultSpeed  = 160 // words per minute
)

// Speeds espeak-ng accepts, in words per minute (espeakRATE in speak_lib.h).
const (
	MinSpeed = 80
	MaxSpeed = 450
)

// name is the provider name in errors and logs.
const name = "espeak"

// installHint ends every error about a missing espeak-ng.
const installHint = "install it with: apt-get install espeak-ng"

// Options configure a Synthesizer. The zero value is usable where espeak-ng is installed.
type Options struct {
	// Binary is the espeak-ng executable: a name looked up in PATH or a path (default
	// DefaultBinary).
	Binary string
	// Voice is an espeak-ng voice, as espeak-ng --voices lists them (default DefaultVoice).
	Voice string
	// Speed is the speaking rate in words per minute, MinSpeed to MaxSpeed (default
	// DefaultSpeed).
	Speed  int
	Logger *slog.Logger // nil discards
}

// Synthesizer speaks text by running espeak-ng once per utterance. Safe for concurrent
// use: calls share nothing but the settings.
type Synthesizer struct {
	bin   string // resolved path of the executable
	voice string
	speed int
	log   *slog.Logger
}

var _ voice.Synthesizer = (*Synthesizer)(nil)

// New returns a Synthesizer for o, filling in the defaults. It fails if the executable
// cannot be found (the error says how to install it), or for a voice name espeak-ng
// could take for an option, or a speed out of range.
func New(o Options) (*Synthesizer, error) {
	bin := cmp.Or(o.Binary, DefaultBinary)
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("espeak: %s not found (%s): %w", bin, installHint, err)
	}
	s := &Synthesizer{bin: path, voice: cmp.Or(o.Voice, DefaultVoice), speed: cmp.Or(o.Speed, DefaultSpeed), log: o.Logger}
	if strings.HasPrefix(s.voice, "-") || strings.IndexFunc(s.voice, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}) >= 0 {
		return nil, fmt.Errorf("espeak: invalid voice name %q", s.voice)
	}
	if s.speed < MinSpeed || s.speed > MaxSpeed {
		return nil, fmt.Errorf("espeak: speed %d words per minute: want %d to %d", s.speed, MinSpeed, MaxSpeed)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Name implements voice.Synthesizer.
func (s *Synthesizer) Name() string { return name }

// Synthesize implements voice.Synthesizer. It starts espeak-ng with the text on its
// standard input and returns once espeak-ng has written its WAV header, so a failure to
// start (a missing binary, an unknown voice) is the error here; the audio then streams,
// converted from espeak-ng's 22050 Hz to f, as espeak-ng writes it. Text with nothing to
// say gives an empty reader; an unsupported format is a KindBadInput error.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, f audio.Format) (io.ReadCloser, error) {
	if _, err := transcode.New(nativeRate, f); err != nil {
		return nil, &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindBadInput, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindOf(err), Err: err}
	}
	text = clean(text)
	if strings.TrimSpace(text) == "" {
		return io.NopCloser(strings.NewReader("")), nil
	}
	st, err := s.start(ctx, text, f)
	if err != nil {
		return nil, err
	}
	if err := st.readHeader(); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// clean replaces invalid UTF-8 and control characters other than newlines with spaces.
func clean(text string) string {
	text = strings.ToValidUTF8(text, " ")
	return strings.Map(func(r rune) rune {
		if r != '\n' && unicode.IsControl(r) {
			return ' '
		}
		return r
	}, text)
}

// start runs espeak-ng on text. The text goes to its standard input, never on the
// command line, so nothing in it can be taken for an option. With --stdin espeak-ng reads
// the whole input before it speaks (without it, it speaks each line alone and cuts lines
// at 1000 bytes); -b 1 says the input is UTF-8.
func (s *Synthesizer) start(ctx context.Context, text string, f audio.Format) (*stream, error) {
	cmd := exec.Command(s.bin, "--stdout", "--stdin", "-b", "1", "-v", s.voice, "-s", strconv.Itoa(s.speed))
	cmd.Stdin = strings.NewReader(text + "\n")
	stderr := &tail{}
	cmd.Stderr = stderr
	// If espeak-ng is a wrapper whose children keep the pipes open after it dies, Wait
	// gives up on them after this long rather than hanging.
	cmd.WaitDelay = time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindUnknown, Err: err}
	}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindUnknown,
			Err: fmt.Errorf("start %s: %w (%s)", s.bin, err, installHint)}
	}
	st := &stream{ctx: ctx, cmd: cmd, stdout: stdout, stderr: stderr, f: f, log: s.log, begin: begin}
	// When the caller gives up, kill and reap espeak-ng even if nobody reads or closes.
	// (This may run before the assignment completes, so it must not use stopWatching.)
	st.stopWatching = context.AfterFunc(ctx, func() {
		st.kill()
		st.wait()
	})
	return st, nil
}

// stream is the audio of one espeak-ng run. One goroutine reads it; Close may come from
// another.
type stream struct {
	ctx          context.Context
	cmd          *exec.Cmd
	stdout       io.ReadCloser
	stderr       *tail
	f            audio.Format
	log          *slog.Logger
	begin        time.Time
	stopWatching func() bool

	closed atomic.Bool

	// Owned by the reader.
	wav   wavReader
	conv  *transcode.Encoder
	raw   []byte // PCM read from espeak-ng, whole samples
	carry []byte // a trailing odd byte awaiting its pair
	out   []byte // converted audio not yet returned is out[off:]
	off   int
	eof   bool  // espeak-ng's output ended
	err   error // the error every Read returns after the audio: io.EOF or a failure
	bytes int   // PCM bytes read, for the log

	killOnce sync.Once
	waitOnce sync.Once
	waitErr  error
}

// readHeader reads espeak-ng's WAV header and prepares the conversion. An output that
// ends before any header (espeak-ng said nothing) leaves the stream at its end.
func (st *stream) readHeader() error {
	st.wav = wavReader{r: st.stdout}
	rate, err := st.wav.header()
	switch {
	case err == io.EOF:
		st.eof = true
		st.err = st.finish()
		if st.err == io.EOF {
			return nil
		}
		return st.err
	case err != nil:
		if fail := st.finish(); fail != io.EOF {
			return fail // espeak-ng failed or was stopped: that says more
		}
		return &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindProtocol, Err: err}
	}
	if st.conv, err = transcode.New(rate, st.f); err != nil {
		return &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindProtocol,
			Err: fmt.Errorf("espeak-ng speaks at %d Hz: %w", rate, err)}
	}
	st.log.Debug("espeak: started", "rate", rate, "after", time.Since(st.begin))
	return nil
}

// errClosed is what Read returns after Close.
var errClosed = errors.New("espeak: read after Close")

// Read returns converted audio as espeak-ng writes it, io.EOF after a clean exit, and a
// *voice.ProviderError when espeak-ng failed (with its last line of standard error) or
// the context ended.
func (st *stream) Read(p []byte) (int, error) {
	for {
		if st.closed.Load() {
			return 0, errClosed
		}
		if st.off < len(st.out) {
			n := copy(p, st.out[st.off:])
			st.off += n
			return n, nil
		}
		if st.eof {
			return 0, st.err
		}
		st.fill()
	}
}

// chunk is how much of espeak-ng's output fill reads at a time: about 90 ms.
const chunk = 4096

// fill reads what espeak-ng has written (at most chunk bytes) and converts it into out.
func (st *stream) fill() {
	st.out, st.off = st.out[:0], 0
	if cap(st.raw) < chunk+1 {
		st.raw = make([]byte, chunk+1)
	}
	raw := append(st.raw[:0], st.carry...)
	n, err := st.wav.r.Read(raw[len(raw):chunk])
	raw = raw[:len(raw)+n]
	st.bytes += n
	whole := len(raw) &^ 1
	st.carry = append(st.carry[:0], raw[whole:]...)
	if whole > 0 {
		st.out = append(st.out, st.conv.EncodeLE(raw[:whole])...)
	}
	if err != nil {
		st.eof = true
		st.err = st.finish()
	}
}

// finish waits for espeak-ng to exit and says how the stream ends: io.EOF after a clean
// exit, otherwise a *voice.ProviderError.
func (st *stream) finish() error {
	err := st.wait()
	st.stopWatching()
	switch {
	case st.closed.Load():
		return errClosed
	case st.ctx.Err() != nil:
		return &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindOf(st.ctx.Err()), Err: st.ctx.Err()}
	case err != nil:
		var ee *exec.ExitError
		msg := err.Error()
		if errors.As(err, &ee) {
			msg = fmt.Sprintf("espeak-ng exited with status %d", ee.ExitCode())
		}
		if line := st.stderr.lastLine(); line != "" {
			msg += ": " + line
		}
		st.log.Warn("espeak: synthesis failed", "err", msg)
		return &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindUnknown, Err: errors.New(msg)}
	}
	played := time.Duration(st.bytes/2) * time.Second / nativeRate
	st.log.Debug("espeak: synthesised", "audio", played, "took", time.Since(st.begin))
	return io.EOF
}

// kill stops espeak-ng if it is still running.
func (st *stream) kill() {
	st.killOnce.Do(func() { _ = st.cmd.Process.Kill() })
}

// wait reaps espeak-ng, once, and returns how it exited.
func (st *stream) wait() error {
	st.waitOnce.Do(func() { st.waitErr = st.cmd.Wait() })
	return st.waitErr
}

// Close kills espeak-ng if it is still speaking and reaps it. Idempotent.
func (st *stream) Close() error {
	st.closed.Store(true)
	st.kill()
	st.wait()
	st.stopWatching()
	return nil
}

// tail keeps the last bytes written to it: espeak-ng's standard error.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

// lastLine is the last non-empty line written.
func (t *tail) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(bytes.TrimSpace(t.buf), []byte("\n"))
	return strings.TrimSpace(string(lines[len(lines)-1]))
}
