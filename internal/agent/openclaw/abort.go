package openclaw

import (
	"context"
	"slices"
	"time"
)

// abortTimeout bounds the wait for the gateway's answer to chat.abort (it answers within
// milliseconds when well), and so how long a new turn may wait for the run it replaces.
const abortTimeout = 10 * time.Second

// abortPending notes an abort sent on sessionKey; the returned func marks it answered.
func (a *Agent) abortPending(sessionKey string) (settled func()) {
	ch := make(chan struct{})
	a.mu.Lock()
	a.aborts[sessionKey] = append(a.aborts[sessionKey], ch)
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		list := slices.DeleteFunc(a.aborts[sessionKey], func(c chan struct{}) bool { return c == ch })
		if len(list) == 0 {
			delete(a.aborts, sessionKey)
		} else {
			a.aborts[sessionKey] = list
		}
		a.mu.Unlock()
		close(ch)
	}
}

// abortSettled waits until every abort sent on sessionKey so far has been answered (each
// gives up after abortTimeout), so that a new run starts on an idle session. Sent to a
// session whose old run is still going, an "agent" run waits behind it and, when that run
// is aborted, the gateway folds the aborted run's words into the new prompt as queued
// context (and chat.send answers under a run id of the gateway's own, which the turn never
// hears). Handset tells the runtime those words itself, in the turn's catch-up note, so
// the wait keeps them from reaching the model twice and the turn's events under its own id.
func (a *Agent) abortSettled(ctx context.Context, sessionKey string) error {
	a.mu.Lock()
	pending := slices.Clone(a.aborts[sessionKey])
	a.mu.Unlock()
	for _, ch := range pending {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
