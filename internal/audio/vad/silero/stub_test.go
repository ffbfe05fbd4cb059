//go:build !embedded

package silero

import (
	"errors"
	"strings"
	"testing"
)

func TestWithoutTheTagSileroSaysWhatIsMissing(t *testing.T) {
	if Available() {
		t.Error("Available() = true in a build without the embedded tag")
	}
	if err := Init("/usr/lib/libonnxruntime.so"); !errors.Is(err, ErrNotLinked) {
		t.Errorf("Init: %v, want ErrNotLinked", err)
	}
	_, err := New(Config{ModelPath: "silero_vad_v5.onnx", Rate: 16000})
	if !errors.Is(err, ErrNotLinked) || !strings.Contains(err.Error(), "-tags embedded") {
		t.Errorf("New: %v, want ErrNotLinked naming the build tag", err)
	}
}
