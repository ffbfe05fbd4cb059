//go:build unix

package edge

import (
	"fmt"
	"syscall"
)

// RaiseOpenFileLimit raises the process's soft limit on open files to its hard limit and
// returns the limit in force. Every connection, call socket, journal and provider stream
// is a file descriptor; a low soft limit (often 1024) lets a few hundred idle clients make
// genuine webhooks wait. (Go raises it to one below the hard limit itself; this takes the
// last one too, and says what the limit is.)
func RaiseOpenFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	if lim.Cur >= lim.Max {
		return uint64(lim.Cur), nil
	}
	raised := lim
	raised.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
		return uint64(lim.Cur), fmt.Errorf("raise the open-file limit from %d to %d: %w", lim.Cur, lim.Max, err)
	}
	return uint64(raised.Cur), nil
}
