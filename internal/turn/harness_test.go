package turn

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// machine runs the state machine the way the engine does: timers it arms fire at their
// due time, in order, before any later input.
type machine struct {
	s      State
	now    time.Time
	timers map[TimerID]armed
	log    []string // every action, described
	ends   int
}

type armed struct {
	due time.Time
	gen uint32
}

func newMachine(cfg Config) *machine {
	return &machine{s: New(cfg), now: t0, timers: map[TimerID]armed{}}
}

// advance fires due timers up to t, then moves the clock there.
func (m *machine) advance(t time.Time) {
	for {
		var next TimerID
		var nt armed
		for id, a := range m.timers {
			if !a.due.After(t) && (next == 0 || a.due.Before(nt.due) || (a.due.Equal(nt.due) && id < next)) {
				next, nt = id, a
			}
		}
		if next == 0 {
			break
		}
		delete(m.timers, next)
		m.apply(Input{Kind: TimerFired, Timer: next, Gen: nt.gen}, nt.due)
	}
	if t.After(m.now) {
		m.now = t
	}
}

func (m *machine) apply(in Input, now time.Time) []Action {
	m.now = now
	if a, ok := m.timers[in.Timer]; in.Kind == TimerFired && ok && a.gen == in.Gen {
		delete(m.timers, in.Timer) // that arming has fired, early or not
	}
	var acts []Action
	m.s, acts = Step(m.s, in, now)
	for _, a := range acts {
		switch a.Kind {
		case ArmTimer:
			m.timers[a.Timer] = armed{due: now.Add(a.After), gen: a.Gen}
		case CancelTimer:
			delete(m.timers, a.Timer)
		case EndCall:
			m.ends++
		}
		m.log = append(m.log, fmt.Sprintf("%d:%s", now.Sub(t0).Milliseconds(), describe(a)))
	}
	return acts
}

// at applies in at ms after t0, firing timers due before it.
func (m *machine) at(ms int, in Input) []Action {
	m.advance(at(ms))
	return m.apply(in, at(ms))
}

func describe(a Action) string {
	switch a.Kind {
	case Dispatch, Say:
		return fmt.Sprintf("%s %d %q", a.Kind, a.Turn, a.Text)
	case CancelTurn, ClearPlayout, RecordInterrupted:
		return fmt.Sprintf("%s %d", a.Kind, a.Turn)
	case ArmTimer:
		return fmt.Sprintf("arm %s %v", a.Timer, a.After)
	case CancelTimer:
		return fmt.Sprintf("cancel %s", a.Timer)
	case Note:
		if a.Text != "" {
			return "note " + a.Reason + " " + a.Text
		}
		return "note " + a.Reason
	case EndCall:
		return "end " + a.End.String()
	}
	return a.Kind.String()
}

// step is one input at a time in a scenario.
type step struct {
	ms int
	in Input
}

func final(text string) Input   { return Input{Kind: Transcript, Text: text, Final: true} }
func partial(text string) Input { return Input{Kind: Transcript, Text: text} }

var (
	start  = Input{Kind: CallStarted}
	speech = Input{Kind: SpeechStart}
	quiet  = Input{Kind: SpeechEnd}
	hangup = Input{Kind: Hangup}
	dtmf   = func(d string) Input { return Input{Kind: DTMF, Text: d} }
	wire   = func(turn int) Input { return Input{Kind: AudioOnWire, Turn: turn} }
	queued = func(turn int) Input { return Input{Kind: SpeechQueued, Turn: turn} }
	played = func(turn int) Input { return Input{Kind: PlayoutDone, Turn: turn} }
	said   = func(turn int, text string) Input { return Input{Kind: SentenceQueued, Turn: turn, Text: text} }
	filler = func(turn int, text string) Input {
		return Input{Kind: SentenceQueued, Turn: turn, Text: text, Filler: true}
	}
	failed = func(turn int, kind string) Input { return Input{Kind: AgentError, Turn: turn, Text: kind} }
)

// run plays steps and then lets time run to until (ms), firing timers.
func run(cfg Config, steps []step, until int) *machine {
	m := newMachine(cfg)
	for _, st := range steps {
		m.at(st.ms, st.in)
	}
	if until > 0 {
		m.advance(at(until))
	}
	return m
}

// pick returns the log lines whose action matches one of the prefixes (after "ms:").
func pick(log []string, prefixes ...string) []string {
	var out []string
	for _, l := range log {
		_, action, _ := strings.Cut(l, ":")
		for _, p := range prefixes {
			if strings.HasPrefix(action, p) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

func armedTimers(s State) []string {
	var out []string
	for id := TimerID(1); id < numTimers; id++ {
		if s.Timers[id].Armed {
			out = append(out, id.String())
		}
	}
	sort.Strings(out)
	return out
}

func mustContain(t *testing.T, log []string, want ...string) {
	t.Helper()
	all := strings.Join(log, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("missing %q in actions:\n%s", w, all)
		}
	}
}

func mustNotContain(t *testing.T, log []string, bad ...string) {
	t.Helper()
	all := strings.Join(log, "\n")
	for _, b := range bad {
		if strings.Contains(all, b) {
			t.Errorf("unexpected %q in actions:\n%s", b, all)
		}
	}
}
