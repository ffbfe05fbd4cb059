//go:build !embedded

package silero

// linked is false: this build has no ONNX Runtime binding (see BuildTag).
const linked = false

// Init would load ONNX Runtime from libPath; this build does not link it, so it returns
// ErrNotLinked.
func Init(libPath string) error { return ErrNotLinked }

func newModel(Config) (model, error) { return nil, ErrNotLinked }
