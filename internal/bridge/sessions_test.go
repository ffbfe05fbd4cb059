package bridge

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// A quiet session holds no open file: its journal is closed a minute after its last turn,
// and its next turn appends to it, its ms still counted from its first event.
func TestAQuietSessionsJournalIsClosedAndGoesOn(t *testing.T) {
	dir := t.TempDir()
	s := newSessions(dir, "hermes")
	defer s.close()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	room := session.Context{CallID: "bridge-room", Carrier: obs.BridgeCarrier}
	turn := func(sc session.Context, n int, at time.Time) *conversation {
		c := s.open(sc, true, at)
		c.begin(n, []voice.Message{{Role: voice.RoleUser, Content: "Are you open?"}}, at)
		c.end(n, "Are you open?", "Until nine.", voice.Usage{}, nil, false, at)
		s.done(c, at)
		return c
	}
	c := turn(room, 1, t0)
	if journalOf(c) == nil {
		t.Fatal("no journal after the first turn")
	}
	// Another session's turn half a minute later finds it open; one after the minute
	// closes it.
	turn(session.Context{CallID: "bridge-other"}, 1, t0.Add(30*time.Second))
	if journalOf(c) == nil {
		t.Fatal("the journal was closed within its minute")
	}
	turn(session.Context{CallID: "bridge-other"}, 2, t0.Add(2*time.Minute))
	if journalOf(c) != nil {
		t.Fatal("a session quiet for two minutes still holds its journal open")
	}
	s.closing.Wait()
	turn(room, 2, t0.Add(3*time.Minute))
	if journalOf(c) == nil {
		t.Fatal("the next turn did not open the journal again")
	}
	s.close()

	events, err := obs.ReadFile(filepath.Join(obs.Dir(dir, "bridge-room"), "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	starts, last := 0, events[len(events)-1]
	for _, e := range events {
		if e.Type == obs.CallStart {
			starts++
		}
	}
	if starts != 1 || last.Type != obs.AgentDone || last.Turn != 2 || last.MS != (3*time.Minute).Milliseconds() {
		t.Fatalf("journal: %d call.start, last %s of turn %d at %d ms; want 1, agent.done of turn 2 at 180000 ms", starts, last.Type, last.Turn, last.MS)
	}
}

// A session forgotten after its half hour is forgotten whole, its journal closed too;
// while a turn runs, neither is let go.
func TestARunningSessionKeepsItsJournal(t *testing.T) {
	s := newSessions(t.TempDir(), "hermes")
	defer s.close()
	t0 := time.Now()
	running := s.open(session.Context{CallID: "bridge-long"}, true, t0)
	quiet := s.open(session.Context{CallID: "bridge-quiet"}, true, t0)
	s.done(quiet, t0)
	s.done(s.open(session.Context{CallID: "bridge-later"}, true, t0.Add(time.Hour)), t0.Add(time.Hour))
	if journalOf(running) == nil {
		t.Error("a running turn's journal was closed")
	}
	s.mu.Lock()
	_, kept := s.byID["bridge-quiet"]
	s.mu.Unlock()
	if kept || journalOf(quiet) != nil {
		t.Errorf("a session quiet for an hour: kept %v, journal open %v", kept, journalOf(quiet) != nil)
	}
	s.done(running, t0.Add(time.Hour))
}

func journalOf(c *conversation) *obs.Journal {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.journal
}
