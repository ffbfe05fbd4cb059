package sippeer

import (
	"bytes"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// maxLog bounds what is kept of a program's output: a runaway peer cannot fill memory.
const maxLog = 4 << 20

// stopGrace is how long a program has to exit after SIGTERM before it is killed.
const stopGrace = 5 * time.Second

// process is a peer program running in its own process group, its output kept.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *logBuffer
	done chan struct{} // closed once the program has exited and err is set
	err  error
}

// startProcess runs path with args in dir, in its own process group so that it and any
// children end together; t's cleanup kills what is left.
func startProcess(t testing.TB, path string, args []string, dir string) (*process, error) {
	return startProcessWatching(t, path, args, dir, nil)
}

// startProcessWatching is startProcess that also hands each line the program prints to
// lines (from the goroutine copying its output).
func startProcessWatching(t testing.TB, path string, args []string, dir string, lines func([]byte)) (*process, error) {
	p := &process{name: path, out: &logBuffer{lines: lines}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	return p, nil
}

// exited reports whether the program has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitCode is the program's exit status once it has ended (-1 for a signal).
func (p *process) exitCode() int { return p.cmd.ProcessState.ExitCode() }

// stop asks the program to end (SIGTERM to its group) and kills it after grace. The
// error is nil when it ended by itself or by the signal.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		p.kill()
		return fmt.Errorf("%s did not end within %v of SIGTERM; killed", p.name, grace)
	}
}

// kill ends the program's group at once and waits for it.
func (p *process) kill() {
	if !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// logBuffer is a bounded output buffer safe for the writer goroutines and readers.
type logBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines func(line []byte) // called with each complete line, when set
	part  []byte
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxLog - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	if b.lines != nil {
		b.part = append(b.part, p...)
		for {
			i := bytes.IndexByte(b.part, '\n')
			if i < 0 {
				break
			}
			b.lines(b.part[:i])
			b.part = b.part[i+1:]
		}
		if len(b.part) > maxLog {
			b.part = b.part[:0] // a line that long is junk
		}
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
