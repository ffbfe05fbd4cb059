package postgres

import (
	"testing"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/storetest"
)

// TestConformance runs the suite every store passes, each subtest on a fresh database.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(t.Context(), newDatabase(t))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}
