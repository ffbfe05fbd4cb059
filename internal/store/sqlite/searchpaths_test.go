package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/storetest"
)

// TestConformanceSearchPaths runs the suite with every transcript search on its other
// paths: each word taken as common (searched call batch by call batch), and prefixes left
// to FTS5 rather than spelt out, so that each path gives the suite's answers.
func TestConformanceSearchPaths(t *testing.T) {
	savedRare, savedTerms := rareMatches, maxPrefixTerms
	t.Cleanup(func() { rareMatches, maxPrefixTerms = savedRare, savedTerms })
	rareMatches, maxPrefixTerms = 0, 0
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(t.Context(), filepath.Join(t.TempDir(), "handset.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}
