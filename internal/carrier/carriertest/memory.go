package carriertest

import (
	"context"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
)

// Memory is a carrier.Memory in maps, for one process: what the gateway's store-backed
// memory does (the first answer kept, a stream opened once, the call ledger merged by
// carrier.Progress.Merge, names seen once, aliases), without a store. Several carriers
// sharing one play several nodes on one store. It forgets nothing: a test is shorter than
// the store's 24 hours.
type Memory struct {
	mu       sync.Mutex
	answers  map[string]carrier.Answer
	progress map[string]carrier.Progress
	seen     map[string]bool
	aliases  map[string]string // a second name → the call's first
	fail     error
}

var _ carrier.Memory = (*Memory)(nil)

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{answers: map[string]carrier.Answer{}, progress: map[string]carrier.Progress{},
		seen: map[string]bool{}, aliases: map[string]string{}}
}

// Fail makes every later call fail with err (a store that is down); nil heals it.
func (m *Memory) Fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = err
}

// name is the call ref stands for: the call it is an alias of, or itself.
func (m *Memory) name(ref string) string {
	if first, ok := m.aliases[ref]; ok {
		return first
	}
	return ref
}

// Remember keeps a as its call's answer unless one is kept.
func (m *Memory) Remember(_ context.Context, a carrier.Answer) (carrier.Answer, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return carrier.Answer{}, false, m.fail
	}
	a.Ref = m.name(a.Ref)
	if kept, ok := m.answers[a.Ref]; ok {
		return kept, false, nil
	}
	m.answers[a.Ref] = a
	return a, true, nil
}

// Streamed records that call ref's stream opened, once.
func (m *Memory) Streamed(_ context.Context, ref string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	ref = m.name(ref)
	a, ok := m.answers[ref]
	switch {
	case !ok:
		return carrier.ErrCallUnknown
	case a.Streamed:
		return carrier.ErrStreamOpened
	}
	a.Streamed = true
	m.answers[ref] = a
	return nil
}

// Progressed merges p into its call's latest word.
func (m *Memory) Progressed(_ context.Context, p carrier.Progress, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if p.Ref == "" {
		return errEmpty("call ref")
	}
	p.Ref = m.name(p.Ref)
	m.progress[p.Ref] = m.progress[p.Ref].Merge(p)
	return nil
}

// Progress is the latest word on call ref.
func (m *Memory) Progress(_ context.Context, ref string) (carrier.Progress, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return carrier.Progress{}, false, m.fail
	}
	p, ok := m.progress[m.name(ref)]
	return p, ok, nil
}

// Once reports whether key is new.
func (m *Memory) Once(_ context.Context, key string, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return false, m.fail
	}
	if key == "" {
		return false, errEmpty("key")
	}
	if m.seen[key] {
		return false, nil
	}
	m.seen[key] = true
	return true, nil
}

// Alias makes other a second name of call ref, moving what other alone held to ref's call.
func (m *Memory) Alias(_ context.Context, ref, other string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if ref == "" || other == "" {
		return errEmpty("call ref or alias")
	}
	first := m.name(ref)
	switch kept, ok := m.aliases[other]; {
	case other == first || ok && kept == first:
		return nil
	case ok:
		return carrier.ErrAliasTaken
	}
	if a, ok := m.answers[other]; ok {
		if _, both := m.answers[first]; both {
			return carrier.ErrAliasTaken
		}
		a.Ref = first
		m.answers[first] = a
		delete(m.answers, other)
	}
	if p, ok := m.progress[other]; ok {
		kept, had := m.progress[first]
		if !had {
			kept.Ref = first
		}
		m.progress[first] = kept.Merge(p)
		delete(m.progress, other)
	}
	for name, to := range m.aliases {
		if to == other {
			m.aliases[name] = first
		}
	}
	m.aliases[other] = first
	return nil
}

type errEmpty string

func (e errEmpty) Error() string { return "carriertest memory: empty " + string(e) }
