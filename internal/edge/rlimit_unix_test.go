//go:build unix

package edge

import (
	"syscall"
	"testing"
)

func TestRaiseOpenFileLimit(t *testing.T) {
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		t.Skip("no open-file limit here:", err) // not a peer: the platform has no such limit
	}
	if was.Max < 64 {
		// not a peer: the machine's hard limit leaves no room below it
		t.Skipf("hard limit %d is too low to lower the soft one for the test", was.Max)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was)
	low := was
	low.Cur = was.Max / 2
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	got, err := RaiseOpenFileLimit()
	if err != nil {
		t.Fatal(err)
	}
	var now syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &now)
	if got != uint64(was.Max) || now.Cur != was.Max {
		t.Errorf("raised to %d (now %d), want the hard limit %d", got, now.Cur, was.Max)
	}
}
