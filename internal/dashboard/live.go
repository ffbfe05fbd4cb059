package dashboard

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

// Where a live call's turn is, derived from its events.
const (
	StateListening      = "listening"
	StateCallerSpeaking = "caller speaking"
	StateThinking       = "thinking"
	StateSpeaking       = "speaking"
	StateEnded          = "ended"
)

// Bounds of the live hub.
const (
	liveBacklog    = 300  // events remembered per call, for a page opened mid-call
	subscriberBuf  = 256  // events queued per subscriber before it counts as stuck
	maxSubsPerCall = 16   // pages following one call
	maxSubsTotal   = 256  // pages following any call, the live list's included
	maxLiveCalls   = 2048 // calls followed at once; beyond it new calls are not shown
)

// listed are the events the live list shows, besides those that change a call's state.
var listed = map[string]bool{obs.CallStart: true, obs.TurnCommit: true, obs.AgentDone: true, obs.CallEnd: true}

var errTooManyViewers = errors.New("too many pages are following live calls: close some and reload")

// liveEvent is one journal event of a live call as pages receive it, with the turn's state
// after it.
type liveEvent struct {
	Call  voice.CallID `json:"call"`
	State string       `json:"state"`
	Event obs.Event    `json:"event"`
}

// subscriber is one page's queue. The hub closes ch when the call ends, or when the page
// fell so far behind that events had to be dropped (lost).
type subscriber struct {
	ch   chan liveEvent
	lost bool // guarded by Live.mu
}

type liveCall struct {
	id       voice.CallID
	observed time.Time
	start    obs.Event // call.start, once seen
	state    string
	caller   string      // the latest caller turn
	agent    string      // the latest reply
	backlog  []liveEvent // a ring of the last liveBacklog events; oldest at first once full
	first    int
	subs     map[*subscriber]struct{}
}

// Live follows the calls in progress: the gateway tees every call's journal into it, and
// the live pages subscribe. It remembers each call's state and latest events until the
// call ends. Observing never blocks a call: a page that cannot keep up loses its stream
// (and is told so), the call goes on.
type Live struct {
	mu    sync.Mutex
	calls map[voice.CallID]*liveCall
	list  map[*subscriber]struct{} // the live list's pages: every call's starts, turns, states and ends
	subs  int                      // subscribers of every kind
	now   func() time.Time
}

// NewLive returns an empty hub.
func NewLive() *Live {
	return &Live{calls: map[voice.CallID]*liveCall{}, list: map[*subscriber]struct{}{}, now: time.Now}
}

// Observe returns the tee for call id's journal (obs.Journal.Tee): the hub follows the
// call from its first event to call.end. The tee only enqueues, so it may run under the
// journal's lock, which also keeps its calls in order.
func (l *Live) Observe(id voice.CallID) func(obs.Event) {
	ended := false
	return func(e obs.Event) {
		if ended {
			return // a late event must not bring an ended call back
		}
		ended = e.Type == obs.CallEnd
		l.record(id, e)
	}
}

// next is the state after event e in state s.
func next(s string, e obs.Event) string {
	switch e.Type {
	case obs.VADSpeechStart:
		if s == StateListening {
			return StateCallerSpeaking
		}
	case obs.VADSpeechEnd:
		if s == StateCallerSpeaking {
			return StateListening
		}
	case obs.TurnCommit:
		return StateThinking
	case obs.PlayoutFirstAudio:
		return StateSpeaking
	case obs.PlayoutDone, obs.BargeIn, obs.TurnInterrupted:
		return StateListening
	case obs.CallEnd:
		return StateEnded
	}
	return s
}

func (l *Live) record(id voice.CallID, e obs.Event) {
	e.TurnConfig = nil // replay detail, large: not for pages
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls[id]
	if c == nil {
		if len(l.calls) >= maxLiveCalls {
			return
		}
		c = &liveCall{id: id, observed: l.now(), state: StateListening, subs: map[*subscriber]struct{}{}}
		l.calls[id] = c
	}
	switch e.Type {
	case obs.CallStart:
		c.start = e
	case obs.TurnCommit:
		c.caller = e.Text
	case obs.AgentDone:
		c.agent = e.Text
	}
	before := c.state
	c.state = next(c.state, e)
	ev := liveEvent{Call: id, State: c.state, Event: e}
	if e.Type != obs.STTPartial { // partials are many and superseded: a late page needs none
		c.remember(ev)
	}
	for s := range c.subs {
		l.send(s, ev, c.subs)
	}
	if listed[e.Type] || c.state != before {
		for s := range l.list {
			l.send(s, ev, l.list)
		}
	}
	if e.Type == obs.CallEnd {
		for s := range c.subs {
			l.drop(s, c.subs)
		}
		delete(l.calls, id)
	}
}

// send queues ev for s, or, when s is full, closes it as lost. Called with l.mu held.
func (l *Live) send(s *subscriber, ev liveEvent, set map[*subscriber]struct{}) {
	select {
	case s.ch <- ev:
	default:
		s.lost = true
		l.drop(s, set)
	}
}

// drop ends subscriber s. Called with l.mu held.
func (l *Live) drop(s *subscriber, set map[*subscriber]struct{}) {
	if _, ok := set[s]; !ok {
		return
	}
	delete(set, s)
	close(s.ch)
	l.subs--
}

// subscribe follows one call (id) or, with an empty id, every call: the events so far (a
// call's backlog) and a subscriber for the rest. ok is false when the call is not live.
func (l *Live) subscribe(id voice.CallID) (s *subscriber, backlog []liveEvent, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.list
	if id != "" {
		c := l.calls[id]
		if c == nil {
			return nil, nil, false, nil
		}
		set = c.subs
		backlog = c.remembered()
		if len(set) >= maxSubsPerCall {
			return nil, nil, true, errTooManyViewers
		}
	}
	if l.subs >= maxSubsTotal {
		return nil, nil, true, errTooManyViewers
	}
	s = &subscriber{ch: make(chan liveEvent, subscriberBuf)}
	set[s] = struct{}{}
	l.subs++
	return s, backlog, true, nil
}

// unsubscribe ends s from its page's side (the page went away).
func (l *Live) unsubscribe(id voice.CallID, s *subscriber) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id == "" {
		l.drop(s, l.list)
	} else if c := l.calls[id]; c != nil {
		l.drop(s, c.subs)
	}
}

// wasLost reports whether the hub closed s because it fell behind.
func (l *Live) wasLost(s *subscriber) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return s.lost
}

// State is where live call id's turn is; ok is false when it is not live here.
func (l *Live) State(id voice.CallID) (string, bool) {
	if l == nil {
		return "", false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls[id]
	if c == nil {
		return "", false
	}
	return c.state, true
}

// liveCallView is a live call on the live page.
type liveCallView struct {
	ID                 voice.CallID
	Since              time.Time
	Carrier, Direction string
	CallerHash, Caller string // Caller: why there is no hash (withheld, unverified)
	State              string
	LastCaller         string
	LastAgent          string
}

// snapshot lists the live calls, oldest first.
func (l *Live) snapshot() []liveCallView {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]liveCallView, 0, len(l.calls))
	for _, c := range l.calls {
		at := c.observed
		if !c.start.TS.IsZero() {
			at = c.start.TS
		}
		out = append(out, liveCallView{ID: c.id, Since: at, Carrier: c.start.Carrier, Direction: c.start.Direction,
			CallerHash: c.start.CallerHash, Caller: c.start.Caller, State: c.state, LastCaller: c.caller, LastAgent: c.agent})
	}
	sortLive(out)
	return out
}

func sortLive(v []liveCallView) {
	slices.SortFunc(v, func(a, b liveCallView) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return strings.Compare(string(a.ID), string(b.ID))
	})
}

// remember keeps ev in the call's backlog, forgetting the oldest once liveBacklog are kept.
// The backlog grows as the call does, never past liveBacklog, then turns in place.
func (c *liveCall) remember(ev liveEvent) {
	switch {
	case len(c.backlog) < cap(c.backlog):
		c.backlog = append(c.backlog, ev)
	case len(c.backlog) < liveBacklog:
		grown := make([]liveEvent, len(c.backlog), min(liveBacklog, max(16, 2*cap(c.backlog))))
		copy(grown, c.backlog)
		c.backlog = append(grown, ev)
	default:
		c.backlog[c.first] = ev
		c.first = (c.first + 1) % liveBacklog
	}
}

// remembered is a copy of the backlog, oldest first.
func (c *liveCall) remembered() []liveEvent {
	out := make([]liveEvent, 0, len(c.backlog))
	out = append(out, c.backlog[c.first:]...)
	return append(out, c.backlog[:c.first]...)
}
