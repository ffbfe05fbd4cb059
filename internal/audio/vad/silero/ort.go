//go:build embedded

package silero

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	ort "github.com/yalue/onnxruntime_go"
)

// linked is true: this build runs the model through ONNX Runtime.
const linked = true

// Names of Silero VAD v5's inputs and outputs.
var (
	inputNames  = []string{"input", "state", "sr"}
	outputNames = []string{"output", "stateN"}
)

var (
	initMu   sync.Mutex
	initPath string      // the library ONNX Runtime was initialised from
	ready    atomic.Bool // Init succeeded
)

// Init loads ONNX Runtime from libPath (libonnxruntime.so) and creates its environment,
// once per process. It is safe for concurrent callers; calls after a success with the
// same path return nil, with another path an error (the first library stays loaded). A
// failed Init may be retried.
func Init(libPath string) error {
	if libPath == "" {
		return errors.New("silero: Init: no path to libonnxruntime.so")
	}
	abs, err := filepath.Abs(libPath)
	if err != nil {
		return fmt.Errorf("silero: Init: %w", err)
	}
	initMu.Lock()
	defer initMu.Unlock()
	if ready.Load() {
		if abs != initPath {
			return fmt.Errorf("silero: Init(%s): ONNX Runtime is already loaded from %s", abs, initPath)
		}
		return nil
	}
	if _, err := os.Stat(abs); err != nil {
		return fmt.Errorf("silero: ONNX Runtime library: %w", err)
	}
	if !ort.IsInitialized() {
		ort.SetSharedLibraryPath(abs)
		if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
			return fmt.Errorf("silero: initialise ONNX Runtime from %s: %w", abs, err)
		}
	}
	initPath = abs
	ready.Store(true)
	return nil
}

// ortModel is one ONNX Runtime session on Silero VAD v5 with its tensors. The tensors'
// data are Go slices that ONNX Runtime reads and writes in place on every Run, so the
// model holds every one of them, the int64 sample-rate scalar included, for the session's
// whole life: one left unreferenced is freed by the GC while ONNX Runtime still points at
// it, and the model then fails (with a shape error in the LSTM) or reads garbage.
type ortModel struct {
	session *ort.DynamicAdvancedSession // shared by every detector of the model (see sessions)
	binding *ort.IoBinding              // this detector's tensors, bound to the session
	input   *ort.Tensor[float32]        // [1, context+window]: context then the new window
	state   *ort.Tensor[float32]        // [2, 1, 128]
	sr      *ort.Scalar[int64]
	output  *ort.Tensor[float32] // [1, 1]
	stateN  *ort.Tensor[float32] // [2, 1, 128]
	ctxLen  int
}

// sessions holds one ONNX Runtime session per model file, shared by every call's detector.
// A session is the model's graph and weights (about 9 MB of native memory each), the same
// for all calls, and ONNX Runtime runs one session from many threads at once; what belongs
// to a call (its input, recurrent state and output tensors) is bound per detector. The
// sessions live as long as the process, like the runtime itself.
var (
	sessionsMu sync.Mutex
	sessions   = map[string]*ort.DynamicAdvancedSession{}
)

func sharedSession(path string) (*ort.DynamicAdvancedSession, error) {
	sessionsMu.Lock()
	defer sessionsMu.Unlock()
	if s := sessions[path]; s != nil {
		return s, nil
	}
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("silero: session options: %w", err)
	}
	defer opts.Destroy()
	// One thread per inference: calls run in parallel on their own goroutines instead.
	if err := opts.SetIntraOpNumThreads(1); err != nil {
		return nil, fmt.Errorf("silero: session options: %w", err)
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		return nil, fmt.Errorf("silero: session options: %w", err)
	}
	s, err := ort.NewDynamicAdvancedSession(path, inputNames, outputNames, opts)
	if err != nil {
		return nil, fmt.Errorf("silero: load %s: %w", path, err)
	}
	sessions[path] = s
	return s, nil
}

func newModel(cfg Config) (model, error) {
	if !ready.Load() {
		return nil, ErrNotInitialized
	}
	if _, err := os.Stat(cfg.ModelPath); err != nil {
		return nil, fmt.Errorf("silero: model: %w", err)
	}
	m := &ortModel{ctxLen: contextLen(cfg.Rate)}
	if err := m.open(cfg); err != nil {
		_ = m.close()
		return nil, err
	}
	return m, nil
}

func (m *ortModel) open(cfg Config) error {
	var err error
	if m.input, err = ort.NewEmptyTensor[float32](ort.NewShape(1, int64(m.ctxLen+Window(cfg.Rate)))); err != nil {
		return fmt.Errorf("silero: input tensor: %w", err)
	}
	if m.state, err = ort.NewEmptyTensor[float32](ort.NewShape(2, 1, 128)); err != nil {
		return fmt.Errorf("silero: state tensor: %w", err)
	}
	if m.sr, err = ort.NewScalar(int64(cfg.Rate)); err != nil {
		return fmt.Errorf("silero: sr scalar: %w", err)
	}
	if m.output, err = ort.NewEmptyTensor[float32](ort.NewShape(1, 1)); err != nil {
		return fmt.Errorf("silero: output tensor: %w", err)
	}
	if m.stateN, err = ort.NewEmptyTensor[float32](ort.NewShape(2, 1, 128)); err != nil {
		return fmt.Errorf("silero: stateN tensor: %w", err)
	}
	if m.session, err = sharedSession(cfg.ModelPath); err != nil {
		return err
	}
	if m.binding, err = m.session.CreateIoBinding(); err != nil {
		return fmt.Errorf("silero: io binding: %w", err)
	}
	for _, b := range []struct {
		name string
		v    ort.Value
		in   bool
	}{{"input", m.input, true}, {"state", m.state, true}, {"sr", m.sr, true}, {"output", m.output, false}, {"stateN", m.stateN, false}} {
		bind := m.binding.BindOutput
		if b.in {
			bind = m.binding.BindInput
		}
		if err := bind(b.name, b.v); err != nil {
			return fmt.Errorf("silero: %s does not take %s (Silero VAD v5 has inputs input, state, sr; outputs output, stateN): %w",
				cfg.ModelPath, b.name, err)
		}
	}
	// ONNX Runtime checks names and shapes only when it runs: run once on silence, so a
	// model that is not Silero VAD v5 fails here.
	if _, err := m.infer(make([]float32, Window(cfg.Rate))); err != nil {
		return fmt.Errorf("silero: %s does not run as Silero VAD v5 (inputs input, state, sr; outputs output, stateN): %w",
			cfg.ModelPath, err)
	}
	m.reset()
	return nil
}

func (m *ortModel) infer(window []float32) (float32, error) {
	in := m.input.GetData()
	copy(in[m.ctxLen:], window)
	if err := m.session.RunWithBinding(m.binding); err != nil {
		return 0, err
	}
	copy(m.state.GetData(), m.stateN.GetData())
	// The next window's context is the end of this one.
	copy(in[:m.ctxLen], in[len(in)-m.ctxLen:])
	return m.output.GetData()[0], nil
}

func (m *ortModel) reset() {
	clear(m.input.GetData())
	clear(m.state.GetData())
}

func (m *ortModel) close() error {
	var errs []error
	if m.binding != nil {
		errs = append(errs, m.binding.Destroy())
	}
	for _, t := range []*ort.Tensor[float32]{m.input, m.state, m.output, m.stateN} {
		if t != nil {
			errs = append(errs, t.Destroy())
		}
	}
	if m.sr != nil {
		errs = append(errs, m.sr.Destroy())
	}
	*m = ortModel{}
	return errors.Join(errs...)
}
