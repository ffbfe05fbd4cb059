package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinApart runs the Handset under load (process child) on CPU 0 and this process, the
// load generator, on the other CPUs, so neither takes the other's time and what is
// measured is what one core of Handset holds. Every existing thread of both is pinned;
// threads started later inherit their creator's CPUs.
func pinApart(child int) error {
	n := runtime.NumCPU()
	if n < 2 {
		return fmt.Errorf("--pin needs at least 2 CPUs, this machine has %d", n)
	}
	var handset, generator unix.CPUSet
	handset.Set(0)
	for i := 1; i < n; i++ {
		generator.Set(i)
	}
	if err := pinThreads(strconv.Itoa(child), &handset); err != nil {
		return err
	}
	return pinThreads("self", &generator)
}

func pinThreads(pid string, set *unix.CPUSet) error {
	tasks, err := os.ReadDir(filepath.Join("/proc", pid, "task"))
	if err != nil {
		return fmt.Errorf("--pin: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("--pin: thread %d: %w", tid, err)
		}
	}
	return nil
}
