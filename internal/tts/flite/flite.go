package flite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/handset-voice/handset/internal/audio/transcode"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/voice"
)

// BuildTag is the build tag that links flite.
const BuildTag = "embedded"

// ErrNotLinked is returned by New in builds without BuildTag.
var ErrNotLinked = errors.New("flite: flite is not linked into this binary: build with -tags " + BuildTag +
	" (needs the Debian package flite1-dev)")

// Available reports whether this binary links flite (was built with BuildTag).
func Available() bool { return linked }

// Defaults for Options.
const (
	// DefaultVoice8k is flite's 8 kHz diphone voice: telephone audio with no resampling.
	DefaultVoice8k = "kal"
	// DefaultVoice16k is flite's 16 kHz clustergen voice, the clearest of the five.
	DefaultVoice16k = "slt"
)

// voiceNames are the voices linked: kal is 8 kHz, the others 16 kHz.
var voiceNames = []string{"kal", "kal16", "slt", "rms", "awb"}

// Voices returns the names of the voices flite offers here.
func Voices() []string { return slices.Clone(voiceNames) }

// name is the provider name in errors and logs.
const name = "flite"

// Options configure a Synthesizer. The zero value is usable.
type Options struct {
	// Voice8k speaks audio asked for at 8000 Hz (default DefaultVoice8k).
	Voice8k string
	// Voice16k speaks audio at every other rate (default DefaultVoice16k).
	Voice16k string
	Logger   *slog.Logger // nil discards
}

// speaker is one flite voice as a synthesis sees it: the embedded build backs it with a
// registered cst_voice, tests with a fake.
type speaker interface {
	id() string
	// rate is the voice's native sample rate in Hz.
	rate() int
	// speak synthesises text, handing sink the samples (valid only during the call) as
	// flite produces them until sink returns false; then it stops and returns errStopped.
	speak(text string, sink func(pcm []int16) bool) error
}

// errStopped is what speak returns when its sink stopped it.
var errStopped = errors.New("flite: synthesis stopped")

// Synthesizer speaks text with flite in this process. Safe for concurrent use: every
// Synthesize runs its own flite utterance (see cgo.go for why that is safe).
type Synthesizer struct {
	v8k, v16k speaker
	log       *slog.Logger
}

var _ voice.Synthesizer = (*Synthesizer)(nil)

// New returns a Synthesizer speaking with the voices o names. The first call registers
// flite's voices (once per process). It fails with ErrNotLinked in builds without
// BuildTag, and for a voice name not in Voices.
func New(o Options) (*Synthesizer, error) {
	if !linked {
		return nil, ErrNotLinked
	}
	s := &Synthesizer{log: o.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.v8k, err = lookup(cmp.Or(o.Voice8k, DefaultVoice8k)); err != nil {
		return nil, err
	}
	if s.v16k, err = lookup(cmp.Or(o.Voice16k, DefaultVoice16k)); err != nil {
		return nil, err
	}
	return s, nil
}

// lookup returns the voice called n.
func lookup(n string) (speaker, error) {
	if !slices.Contains(voiceNames, n) {
		return nil, fmt.Errorf("flite: unknown voice %q (flite has %s)", n, strings.Join(voiceNames, ", "))
	}
	return loadVoice(n)
}

// Name implements voice.Synthesizer.
func (s *Synthesizer) Name() string { return name }

// Synthesize implements voice.Synthesizer. Audio at 8000 Hz comes from Voice8k, any other
// rate from Voice16k, resampled from the voice's own rate when they differ. The text is
// spoken a sentence at a time (see splitText), and each sentence streams as flite makes
// it, so the first audio is ready long before a long text is done. Blank text gives an
// empty reader; an unsupported format is a KindBadInput error. Close the reader (or end
// ctx) when done with it: a reader left unread holds up to 10 s of audio and a thread
// waiting inside flite.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, f audio.Format) (io.ReadCloser, error) {
	sp := s.v16k
	if f.Rate == 8000 {
		sp = s.v8k
	}
	conv, err := transcode.New(sp.rate(), f)
	if err != nil {
		return nil, &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindBadInput, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindOf(err), Err: err}
	}
	chunks := splitText(text)
	if len(chunks) == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	st := newStream(ctx, f)
	go st.run(sp, chunks, conv, s.log)
	return st, nil
}
