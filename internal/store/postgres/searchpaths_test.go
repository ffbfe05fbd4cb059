package postgres

import (
	"testing"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/storetest"
)

// TestConformanceSearchPaths runs the suite with every transcript search past its first
// walk (of one call): once looked up from the matching lines, once walking on through the
// calls, so that each path gives the suite's answers.
func TestConformanceSearchPaths(t *testing.T) {
	savedWalk, savedPer, savedRare := walkFirst, walkPerCall, rareMatches
	t.Cleanup(func() { walkFirst, walkPerCall, rareMatches = savedWalk, savedPer, savedRare })
	walkFirst, walkPerCall = 1, 0
	for name, rare := range map[string]int{"lines": 1 << 30, "walk": 0} {
		t.Run(name, func(t *testing.T) {
			rareMatches = rare
			storetest.Run(t, func(t *testing.T) store.Store {
				s, err := Open(t.Context(), newDatabase(t))
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				return s
			})
		})
	}
}
