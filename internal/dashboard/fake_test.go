package dashboard

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// fakeSource is an in-memory Source that honours the filters simply and remembers the
// last filter of each kind it was asked with.
type fakeSource struct {
	mu       sync.Mutex
	calls    []store.Call // any order
	lines    map[voice.CallID][]store.TranscriptLine
	sessions []store.Session
	jobs     []store.Job
	batches  []store.Batch
	err      error

	lastCalls    store.ListCalls
	lastJobs     store.ListJobs
	lastSessions store.ListSessions
}

func (f *fakeSource) Calls(_ context.Context, l store.ListCalls) ([]store.Call, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastCalls = l
	if f.err != nil {
		return nil, f.err
	}
	all := slices.Clone(f.calls)
	slices.SortFunc(all, func(a, b store.Call) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(string(b.ID), string(a.ID))
	})
	var out []store.Call
	for _, c := range all {
		switch {
		case l.CallerHash != "" && c.CallerHash != l.CallerHash,
			!l.Before.IsZero() && !(c.StartedAt.Before(l.Before) || c.StartedAt.Equal(l.Before) && c.ID < l.BeforeID),
			!l.Since.IsZero() && c.StartedAt.Before(l.Since),
			l.Outcome != "" && c.Outcome != l.Outcome,
			l.Carrier != "" && c.Carrier != l.Carrier,
			l.Live && !c.EndedAt.IsZero(),
			l.Broken && c.Summary.Stage == "",
			l.Text != "" && !f.said(c.ID, l.Text):
			continue
		}
		out = append(out, c)
		if limit := cmpOr(l.Limit, 50); len(out) == limit {
			break
		}
	}
	return out, nil
}

// said: a line of the call's transcript has every word of text.
func (f *fakeSource) said(id voice.CallID, text string) bool {
	for _, l := range f.lines[id] {
		all := true
		for _, w := range strings.Fields(strings.ToLower(text)) {
			all = all && strings.Contains(strings.ToLower(l.Text), w)
		}
		if all {
			return true
		}
	}
	return false
}

func (f *fakeSource) Call(_ context.Context, id voice.CallID) (store.Call, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return store.Call{}, f.err
	}
	for _, c := range f.calls {
		if c.ID == id {
			return c, nil
		}
	}
	return store.Call{}, store.ErrNotFound
}

func (f *fakeSource) Transcript(_ context.Context, id voice.CallID) ([]store.TranscriptLine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lines[id]), f.err
}

func (f *fakeSource) Sessions(_ context.Context, l store.ListSessions) ([]store.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastSessions = l
	all := slices.Clone(f.sessions)
	slices.SortFunc(all, func(a, b store.Session) int {
		if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
			return c
		}
		return strings.Compare(b.CallerHash, a.CallerHash)
	})
	var out []store.Session
	for _, s := range all {
		if !l.Before.IsZero() && !(s.LastSeen.Before(l.Before) || s.LastSeen.Equal(l.Before) && s.CallerHash < l.BeforeHash) {
			continue
		}
		out = append(out, s)
		if len(out) == cmpOr(l.Limit, 50) {
			break
		}
	}
	return out, f.err
}

func (f *fakeSource) Jobs(_ context.Context, l store.ListJobs) ([]store.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastJobs = l
	all := slices.Clone(f.jobs)
	slices.SortFunc(all, func(a, b store.Job) int { return int(b.ID - a.ID) })
	var out []store.Job
	for _, j := range all {
		if l.Kind != "" && j.Kind != l.Kind || l.Before != 0 && j.ID >= l.Before {
			continue
		}
		out = append(out, j)
		if len(out) == cmpOr(l.Limit, 100) {
			break
		}
	}
	return out, f.err
}

func (f *fakeSource) Batches(_ context.Context, limit int) ([]store.Batch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.batches[:min(limit, len(f.batches))], f.err
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
