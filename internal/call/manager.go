package call

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// Admission errors.
var (
	ErrDraining = errors.New("call: server is draining: not admitting new calls")
	ErrBusy     = errors.New("call: at the concurrent-call limit")
)

// Manager admits calls, tracks them and drains them on shutdown. Safe for concurrent use.
type Manager struct {
	base context.Context
	max  int

	mu       sync.Mutex // guards following
	calls    map[voice.CallID]*Call
	draining bool
	wg       sync.WaitGroup
}

// NewManager returns a manager whose calls live under base (the server's context) and
// which admits at most max calls at once (0: no limit).
func NewManager(base context.Context, max int) *Manager {
	return &Manager{base: base, max: max, calls: map[voice.CallID]*Call{}}
}

// Start admits a call and runs it on its own goroutine.
func (m *Manager) Start(cfg Config, deps Deps) (*Call, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.draining {
		return nil, ErrDraining
	}
	if m.max > 0 && len(m.calls) >= m.max {
		return nil, ErrBusy
	}
	c := New(m.base, cfg, deps)
	m.calls[c.ID()] = c
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		c.Run()
		if deps.Journal != nil {
			_ = deps.Journal.Close()
		}
		m.mu.Lock()
		delete(m.calls, c.ID())
		m.mu.Unlock()
	}()
	return c, nil
}

// Get returns call id if it is running on this node.
func (m *Manager) Get(id voice.CallID) (*Call, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.calls[id]
	return c, ok
}

// Active returns how many calls are running.
func (m *Manager) Active() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

// Draining reports whether the manager stopped admitting calls.
func (m *Manager) Draining() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.draining
}

// Goodbye is what Drain says to the calls still going when its time is up.
type Goodbye struct {
	Text string // said to each call before it ends; empty: the calls end at once
	// Within bounds how long the goodbyes may take, from the drain's deadline: a call
	// still going then is hung up.
	Within time.Duration
}

// Drain stops admitting calls and waits for running ones to finish until ctx ends. Then
// each call left says bye.Text and ends once the caller has heard it; those still going
// bye.Within later are hung up. It returns when every call has stopped.
func (m *Manager) Drain(ctx context.Context, bye Goodbye) {
	m.mu.Lock()
	m.draining = true
	m.mu.Unlock()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	if bye.Within > 0 {
		for _, c := range m.running() {
			// Each on its own goroutine: a call's owner that is slow to take it must not
			// hold up the others' goodbyes. It returns once taken, or at the hang-up.
			go c.Goodbye(bye.Text)
		}
		t := time.NewTimer(bye.Within)
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C:
		}
	}
	for _, c := range m.running() {
		c.Hangup()
	}
	<-done
}

// running is the calls running now.
func (m *Manager) running() []*Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Call, 0, len(m.calls))
	for _, c := range m.calls {
		out = append(out, c)
	}
	return out
}
