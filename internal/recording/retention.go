package recording

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/handset-voice/handset/internal/obs"
)

// Sweep deletes the recordings under dataDir (this node's calls only) last written before
// now - keep, and reports how many it deleted. keep <= 0 keeps every recording. A
// recording still being written is never old: its file changes every flush.
func Sweep(dataDir string, keep time.Duration, now time.Time) (int, error) {
	if keep <= 0 {
		return 0, nil
	}
	calls := filepath.Dir(obs.Dir(dataDir, "-")) // the folder that holds every call's
	entries, err := os.ReadDir(calls)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	cutoff := now.Add(-keep)
	removed := 0
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(calls, e.Name(), FileName)
		st, err := os.Lstat(path)
		if err != nil || !st.Mode().IsRegular() || !st.ModTime().Before(cutoff) {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
