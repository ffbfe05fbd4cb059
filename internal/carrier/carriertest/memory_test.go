package carriertest

import (
	"testing"

	"github.com/handset-voice/handset/internal/carrier"
)

func TestMemory(t *testing.T) {
	RunMemory(t, func(*testing.T) carrier.Memory { return NewMemory() })
}
