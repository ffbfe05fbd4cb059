package sphinx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/voice"
)

// DefaultModelDir is where Debian's pocketsphinx-en-us installs the US English model: the
// acoustic model en-us/, the trigram language model en-us.lm.bin and the pronouncing
// dictionary cmudict-en-us.dict.
const DefaultModelDir = "/usr/share/pocketsphinx/model/en-us"

// DefaultDecoders is the size of the decoder pool for a zero Options.Decoders: one per
// core of the reference 2-core machine.
const DefaultDecoders = 2

// modelPackage is the Debian package that installs DefaultModelDir.
const modelPackage = "pocketsphinx-en-us"

// The model's parts, relative to the model directory.
const (
	acousticDir = "en-us"
	lmFile      = "en-us.lm.bin"
	dictFile    = "cmudict-en-us.dict"
)

// acousticFiles must all be in acousticDir; it also needs one of mixtureFiles.
var (
	acousticFiles = []string{"feat.params", "mdef", "means", "variances", "transition_matrices", "noisedict"}
	mixtureFiles  = []string{"sendump", "mixture_weights"}
)

// providerName is the Recognizer's Name and the Provider of its errors.
const providerName = "sphinx"

// ErrNotLinked is returned by New in builds without the build tag embedded.
var ErrNotLinked = errors.New("sphinx: handset was built without the embedded engines (build tag embedded)")

// ErrClosed is returned by a stream's Write and Finalize after its Close; errors of streams
// ended by Recognizer.Close, and of Stream after it, wrap it.
var ErrClosed = errors.New("sphinx: closed")

// Available reports whether this build links PocketSphinx (was built with the tag
// embedded). Even then New needs the model (see CheckModel).
func Available() bool { return linked }

// CheckModel reports whether dir holds the whole PocketSphinx model New loads: the
// acoustic model directory en-us/ (feat.params, mdef, means, variances,
// transition_matrices, noisedict, and sendump or mixture_weights), en-us.lm.bin and
// cmudict-en-us.dict. Its error names every missing file and how to install them; it wraps
// fs.ErrNotExist when something is missing. It is plain Go and works in every build, so
// doctor can check the model even where PocketSphinx is not linked.
func CheckModel(dir string) error {
	if dir == "" {
		dir = DefaultModelDir
	}
	install := fmt.Sprintf("install the Debian package %s (apt-get install %s) or set the model directory "+
		"to a copy of %s", modelPackage, modelPackage, DefaultModelDir)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sphinx: model directory %s does not exist: %s: %w", dir, install, fs.ErrNotExist)
	case err != nil:
		return fmt.Errorf("sphinx: model directory: %w", err)
	case !st.IsDir():
		return fmt.Errorf("sphinx: model directory %s is not a directory: %s", dir, install)
	}
	var missing []string
	need := func(rel string, wantDir bool) bool {
		st, err := os.Stat(filepath.Join(dir, rel))
		if err != nil || st.IsDir() != wantDir {
			missing = append(missing, rel)
			return false
		}
		return true
	}
	if need(acousticDir+"/", true) {
		for _, f := range acousticFiles {
			need(filepath.Join(acousticDir, f), false)
		}
		found := false
		for _, f := range mixtureFiles {
			if st, err := os.Stat(filepath.Join(dir, acousticDir, f)); err == nil && !st.IsDir() {
				found = true
			}
		}
		if !found {
			missing = append(missing, filepath.Join(acousticDir, mixtureFiles[0])+" (or "+mixtureFiles[1]+")")
		}
	}
	need(lmFile, false)
	need(dictFile, false)
	if len(missing) > 0 {
		return fmt.Errorf("sphinx: PocketSphinx model in %s is incomplete: missing %s: %s: %w",
			dir, strings.Join(missing, ", "), install, fs.ErrNotExist)
	}
	return nil
}

// Options configure a Recognizer. Zero values take the defaults.
type Options struct {
	ModelDir string // the model directory (see CheckModel); default DefaultModelDir
	// Decoders is how many decoders New loads up front, shared by all streams: each holds
	// its own copy of the model (about 100 MB) and decodes one utterance at a time. Default
	// DefaultDecoders.
	Decoders int
	Logger   *slog.Logger // nil discards
}

func (o *Options) setDefaults() error {
	if o.ModelDir == "" {
		o.ModelDir = DefaultModelDir
	}
	switch {
	case o.Decoders == 0:
		o.Decoders = DefaultDecoders
	case o.Decoders < 0:
		return fmt.Errorf("sphinx: %d decoders: want at least 1", o.Decoders)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Recognizer is PocketSphinx behind voice.Recognizer: a pool of preloaded decoders shared
// by every stream it opens, taken for one utterance at a time (see the package comment).
// Safe for concurrent use.
type Recognizer struct {
	opts Options
	log  *slog.Logger
	pool *pool
	clk  clock.Clock
	tune tuning

	mu      sync.Mutex // guards following
	closed  bool
	streams map[*stream]struct{}
	priors  map[int][]float32 // sample rate -> the normalisation state the last utterance at it ended with
	cold    map[int][]float32 // sample rate -> the state before any utterance at it (see coldPriors)

	closeOnce sync.Once
}

var _ voice.Recognizer = (*Recognizer)(nil)

// New loads the model into opts.Decoders decoders (about 300 ms and 100 MB each, loaded
// in parallel) and returns a Recognizer that shares them. It fails with ErrNotLinked in
// builds without the tag embedded, with CheckModel's error when the model is incomplete,
// and with PocketSphinx's refusal when a model file does not load.
func New(opts Options) (*Recognizer, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if !linked {
		return nil, ErrNotLinked
	}
	if err := CheckModel(opts.ModelDir); err != nil {
		return nil, err
	}
	start := time.Now()
	decs, err := loadDecoders(opts.ModelDir, opts.Decoders)
	if err != nil {
		return nil, err
	}
	r := newRecognizer(opts, decs, clock.Real{}, defaultTuning())
	r.cold = coldPriors()
	r.log.Info("sphinx: PocketSphinx model loaded (embedded STT, demo quality)",
		"dir", opts.ModelDir, "decoders", len(decs), "took", time.Since(start).Round(time.Millisecond))
	return r, nil
}

// loadDecoders loads n decoders at once, one goroutine each; on any failure it frees the
// ones that loaded and returns the first error.
func loadDecoders(dir string, n int) ([]decoder, error) {
	decs := make([]decoder, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { decs[i], errs[i] = newDecoder(dir) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, d := range decs {
			if d != nil {
				d.close()
			}
		}
		return nil, err
	}
	return decs, nil
}

// newRecognizer is New after the decoders are loaded; tests pass fakes, a fake clock and
// small thresholds.
func newRecognizer(opts Options, decs []decoder, clk clock.Clock, tune tuning) *Recognizer {
	return &Recognizer{
		opts:    opts,
		log:     opts.Logger.With("provider", providerName),
		pool:    newPool(decs),
		clk:     clk,
		tune:    tune,
		streams: make(map[*stream]struct{}),
		priors:  make(map[int][]float32),
	}
}

// cmnPrior is the cepstral mean normalisation state a stream at rate starts its first
// utterance from: the one the latest utterance with words at that rate ended with (8 kHz
// audio up-sampled and true 16 kHz audio have very different means), else the cold prior
// for the rate, else nil (the model's initial mean).
func (r *Recognizer) cmnPrior(rate int) []float32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.priors[rate]; p != nil {
		return p
	}
	return r.cold[rate]
}

func (r *Recognizer) setCMNPrior(rate int, cmn []float32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.priors[rate] = cmn
}

// Name is "sphinx".
func (r *Recognizer) Name() string { return providerName }

// Stream opens a stream for audio in format f: PCM16, mu-law or A-law at 8000 or 16000 Hz
// (8 kHz is up-sampled: the model is 16 kHz only). It takes no decoder until the audio
// gets louder than the gate. Errors are *voice.ProviderError: KindBadInput for another
// format, KindCanceled when ctx is done or the Recognizer is closed.
func (r *Recognizer) Stream(ctx context.Context, f audio.Format, o voice.StreamOptions) (voice.RecognizerStream, error) {
	conv, err := newConverter(f)
	if err != nil {
		return nil, &voice.ProviderError{Provider: providerName, Op: "open stream", Kind: voice.KindBadInput, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &voice.ProviderError{Provider: providerName, Op: "open stream", Kind: voice.KindOf(err), Err: err}
	}
	log := r.log
	if o.CallID != "" {
		log = log.With("call", string(o.CallID))
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, &voice.ProviderError{Provider: providerName, Op: "open stream", Kind: voice.KindCanceled, Err: errRecognizerClosed}
	}
	s := newStream(r, log, f, conv)
	r.streams[s] = struct{}{}
	r.mu.Unlock()
	s.start(ctx)
	return s, nil
}

// errRecognizerClosed ends the streams still open when the Recognizer is closed.
var errRecognizerClosed = fmt.Errorf("recognizer closed: %w", ErrClosed)

// forget drops an ended stream from the set Close ends.
func (r *Recognizer) forget(s *stream) {
	r.mu.Lock()
	delete(r.streams, s)
	r.mu.Unlock()
}

// Close ends every stream still open (their Close, Write and Finalize then return an error
// of kind KindCanceled wrapping ErrClosed; an utterance in progress is discarded), waits
// for their goroutines to give their decoders back, and frees the decoders. Stream fails
// afterwards. Idempotent; always nil.
func (r *Recognizer) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		open := make([]*stream, 0, len(r.streams))
		for s := range r.streams {
			open = append(open, s)
		}
		r.mu.Unlock()
		for _, s := range open {
			s.abort(&voice.ProviderError{Provider: providerName, Op: "stream", Kind: voice.KindCanceled, Err: errRecognizerClosed})
		}
		for _, s := range open {
			<-s.done
		}
		r.pool.close()
		r.log.Debug("sphinx: recognizer closed", "streams_ended", len(open))
	})
	return nil
}
