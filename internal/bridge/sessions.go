package bridge

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// Defaults for the sessions a Handler remembers.
const (
	// sessionIdle is how long a session is remembered after its last turn. A voice
	// platform's conversation has turns seconds apart; one silent this long has ended.
	sessionIdle = 30 * time.Minute
	// maxSessions bounds what the sessions hold (a remembered turn and an open journal
	// each): past it, the longest idle are let go first.
	maxSessions = 10000
)

// sessions holds what the bridge remembers of each session: its last turn (memory.go)
// and its journal, <data dir>/calls/<session's call id>/events.jsonl. A session is let
// go, its journal closed, after sessionIdle without a turn; a later turn opens the
// journal again and appends.
type sessions struct {
	dataDir string // "": no journals
	agent   string

	mu        sync.Mutex // guards the following
	byID      map[voice.CallID]*conversation
	lastSweep time.Time
}

// conversation is one session's state.
type conversation struct {
	id      voice.CallID
	journal *obs.Journal // nil without a data dir, or when it could not be opened

	mu      sync.Mutex // guards the following
	last    lastTurn
	used    time.Time
	running int
}

func newSessions(dataDir, agent string) *sessions {
	return &sessions{dataDir: dataDir, agent: agent, byID: map[voice.CallID]*conversation{}}
}

// open returns the session's state, its journal opened (and begun with call.start when
// new); keep false for a session of one request, which is not remembered. Every open
// is matched by a done.
func (s *sessions) open(sc session.Context, keep bool, now time.Time) *conversation {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)
	c := s.byID[sc.CallID]
	if c == nil {
		c = &conversation{id: sc.CallID, journal: s.openJournal(sc, now)}
		if keep {
			s.byID[sc.CallID] = c
		}
	}
	c.mu.Lock()
	c.running++
	c.used = now
	c.mu.Unlock()
	return c
}

// done ends a turn of c; a session of one request closes its journal.
func (s *sessions) done(c *conversation, now time.Time) {
	c.mu.Lock()
	c.running--
	c.used = now
	c.mu.Unlock()
	s.mu.Lock()
	kept := s.byID[c.id] == c
	s.mu.Unlock()
	if !kept {
		_ = c.journal.Close()
	}
}

// sweep lets go of sessions idle past sessionIdle, and of the longest idle beyond
// maxSessions; at most once a minute unless over the limit. Caller holds mu.
func (s *sessions) sweep(now time.Time) {
	if len(s.byID) < maxSessions && now.Sub(s.lastSweep) < time.Minute {
		return
	}
	s.lastSweep = now
	var idle []*conversation
	for id, c := range s.byID {
		c.mu.Lock()
		running, used := c.running, c.used
		c.mu.Unlock()
		switch {
		case running > 0:
		case now.Sub(used) >= sessionIdle:
			delete(s.byID, id)
			_ = c.journal.Close()
		default:
			idle = append(idle, c)
		}
	}
	if over := len(s.byID) - maxSessions + 1; over > 0 {
		slices.SortFunc(idle, func(a, b *conversation) int { return a.used.Compare(b.used) })
		for _, c := range idle[:min(over, len(idle))] {
			delete(s.byID, c.id)
			_ = c.journal.Close()
		}
	}
}

// close lets go of every session (the server stops).
func (s *sessions) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, c := range s.byID {
		delete(s.byID, id)
		_ = c.journal.Close()
	}
}

// openJournal opens the session's journal for appending. A new one begins with
// call.start; one a session wrote before (an earlier process, or before it was let go)
// goes on, its ms still counted from its first event. Without a data dir, or when the
// file cannot be opened, turns are journalled nowhere (and the server logs nothing
// more: the bridge's log line per turn remains).
func (s *sessions) openJournal(sc session.Context, now time.Time) *obs.Journal {
	if s.dataDir == "" {
		return nil
	}
	path := filepath.Join(obs.Dir(s.dataDir, string(sc.CallID)), "events.jsonl")
	start, existed := journalStart(path)
	if !existed {
		start = now
	}
	j, err := obs.Create(s.dataDir, string(sc.CallID), start)
	if err != nil {
		return nil
	}
	if !existed {
		j.Record(now, obs.Event{Type: obs.CallStart, Carrier: sc.Carrier, Direction: string(sc.Direction),
			CallerHash: sc.CallerHash, Caller: string(sc.Caller), Agent: s.agent})
	}
	return j
}

// journalStart is the time of a journal's first event; existed is false when there is
// no journal there, or it is empty or unreadable (it is then begun again).
func journalStart(path string) (start time.Time, existed bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadSlice('\n')
	if err != nil {
		return time.Time{}, false
	}
	var first struct {
		TS time.Time `json:"ts"`
	}
	if json.Unmarshal(line, &first) != nil || first.TS.IsZero() {
		return time.Time{}, false
	}
	return first.TS, true
}

// begin records the start of a turn: what its runtime has not been told, given the
// request's history, and the turn's first journal lines.
func (c *conversation) begin(turn int, history []voice.Message, now time.Time) (unseen []voice.Message) {
	c.mu.Lock()
	last := c.last
	c.last = lastTurn{turn: turn, historyLen: len(history), user: history[len(history)-1].Content}
	c.mu.Unlock()
	unseen, heard, cut := last.missed(history)
	if cut {
		// the last reply was cut off on the client's line: this is what its user heard
		c.journal.Record(now, obs.Event{Type: obs.BargeIn, Turn: last.turn, Text: heard})
	}
	c.journal.Record(now, obs.Event{Type: obs.TurnCommit, Turn: turn, Text: history[len(history)-1].Content})
	c.journal.Record(now, obs.Event{Type: obs.AgentRequest, Turn: turn})
	return unseen
}

// firstText records the turn's first text reaching the client.
func (c *conversation) firstText(turn int, now time.Time) {
	c.journal.Record(now, obs.Event{Type: obs.AgentFirstToken, Turn: turn})
}

// end records how the turn ended: reply is the text the client was sent; finished when
// the runtime's run ended with it; err the runtime's failure, or stopped when the client
// went away.
func (c *conversation) end(turn int, user, reply string, usage voice.Usage, err error, stopped bool, now time.Time) {
	c.mu.Lock()
	if c.last.user == user {
		c.last.reply, c.last.finished = reply, err == nil && !stopped
	}
	c.mu.Unlock()
	switch {
	case stopped:
		c.journal.Record(now, obs.Event{Type: obs.TurnInterrupted, Turn: turn})
	case err != nil:
		c.journal.Record(now, obs.Event{Type: obs.AgentError, Turn: turn, Kind: string(voice.KindOf(err)), Message: err.Error()})
	default:
		c.journal.Record(now, obs.Event{Type: obs.AgentDone, Turn: turn, Text: reply,
			InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens})
	}
}

// ended records that the session's call is over (a Retell call's socket closed).
func (c *conversation) ended(reason string, now time.Time) {
	c.journal.Record(now, obs.Event{Type: obs.CallEnd, Reason: reason})
}
