//go:build !embedded

package sphinx

import (
	"errors"
	"strings"
	"testing"
)

func TestWithoutTheTagNewSaysWhatIsMissing(t *testing.T) {
	if Available() {
		t.Error("Available() = true in a build without the embedded tag")
	}
	_, err := New(Options{})
	if !errors.Is(err, ErrNotLinked) || !strings.Contains(err.Error(), "build tag embedded") {
		t.Errorf("New: %v, want ErrNotLinked naming the build tag", err)
	}
}
