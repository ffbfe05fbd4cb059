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
	// journalIdle is how long a session's journal stays open after its last turn: a
	// conversation's next turn finds it open, and a platform's thousands of quiet
	// sessions hold no files.
	journalIdle = time.Minute
	// maxSessions bounds the sessions remembered: past it, the longest idle are let go
	// first.
	maxSessions = 10000
)

// sessions holds what the bridge remembers of each session: its last turn (memory.go)
// and its journal, <data dir>/calls/<session's call id>/events.jsonl. A journal is closed
// journalIdle after its session's last turn, and the session let go after sessionIdle;
// a later turn opens the journal again and appends. Journals are closed away from the
// turns: closing one syncs it to disk.
type sessions struct {
	dataDir string // "": no journals
	agent   string

	mu        sync.Mutex // guards the following
	byID      map[voice.CallID]*conversation
	lastSweep time.Time

	closing sync.WaitGroup // journals being closed
}

// conversation is one session's state.
type conversation struct {
	id voice.CallID

	mu      sync.Mutex   // guards the following
	journal *obs.Journal // open while turns run and for journalIdle after; nil without a data dir or when it could not be opened
	start   time.Time    // the journal's first event, which its ms count from; zero: not yet known
	last    lastTurn
	used    time.Time
	running int
}

func newSessions(dataDir, agent string) *sessions {
	return &sessions{dataDir: dataDir, agent: agent, byID: map[voice.CallID]*conversation{}}
}

// open returns the session's state, its journal open (and begun with call.start when
// new); keep false for a session of one request, which is not remembered. Every open
// is matched by a done.
func (s *sessions) open(sc session.Context, keep bool, now time.Time) *conversation {
	s.mu.Lock()
	s.closeLater(s.sweep(now))
	c := s.byID[sc.CallID]
	if c == nil {
		c = &conversation{id: sc.CallID}
		if keep {
			s.byID[sc.CallID] = c
		}
	}
	s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running++
	c.used = now
	if c.journal == nil && s.dataDir != "" {
		c.journal, c.start = s.openJournal(sc, c.start, now)
	}
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
		c.mu.Lock()
		j := c.journal
		c.journal = nil
		c.mu.Unlock()
		_ = j.Close()
	}
}

// sweep lets go of sessions idle past sessionIdle, and of the longest idle beyond
// maxSessions, and takes the journals of those idle past journalIdle; at most once a
// minute unless over the limit. It returns the journals taken, for closing without
// mu. Caller holds mu.
func (s *sessions) sweep(now time.Time) (toClose []*obs.Journal) {
	if len(s.byID) < maxSessions && now.Sub(s.lastSweep) < time.Minute {
		return nil
	}
	s.lastSweep = now
	var idle []*conversation
	for id, c := range s.byID {
		c.mu.Lock()
		switch idleFor := now.Sub(c.used); {
		case c.running > 0:
		case idleFor >= sessionIdle:
			delete(s.byID, id)
			toClose = append(toClose, c.journal)
			c.journal = nil
		default:
			if idleFor >= journalIdle && c.journal != nil {
				toClose = append(toClose, c.journal)
				c.journal = nil
			}
			idle = append(idle, c)
		}
		c.mu.Unlock()
	}
	if over := len(s.byID) - maxSessions + 1; over > 0 {
		slices.SortFunc(idle, func(a, b *conversation) int { return a.used.Compare(b.used) })
		for _, c := range idle[:min(over, len(idle))] {
			delete(s.byID, c.id)
			c.mu.Lock()
			toClose = append(toClose, c.journal)
			c.journal = nil
			c.mu.Unlock()
		}
	}
	return toClose
}

// closeLater closes journals on a goroutine of their own: each syncs to disk, which no
// turn should wait for.
func (s *sessions) closeLater(journals []*obs.Journal) {
	if len(journals) == 0 {
		return
	}
	s.closing.Add(1)
	go func() {
		defer s.closing.Done()
		for _, j := range journals {
			_ = j.Close()
		}
	}()
}

// close lets go of every session (the server stops), once the journals being closed are.
func (s *sessions) close() {
	s.mu.Lock()
	var journals []*obs.Journal
	for id, c := range s.byID {
		delete(s.byID, id)
		c.mu.Lock()
		journals = append(journals, c.journal)
		c.journal = nil
		c.mu.Unlock()
	}
	s.mu.Unlock()
	for _, j := range journals {
		_ = j.Close()
	}
	s.closing.Wait()
}

// openJournal opens the session's journal for appending, start being its first event's
// time when known. A new one begins with call.start; one a session wrote before (an
// earlier process, or before its journal was closed) goes on, its ms still counted from
// its first event. Without a data dir, or when the file cannot be opened, turns are
// journalled nowhere (and the server logs nothing more: the bridge's log line per turn
// remains).
func (s *sessions) openJournal(sc session.Context, start, now time.Time) (*obs.Journal, time.Time) {
	path := filepath.Join(obs.Dir(s.dataDir, string(sc.CallID)), "events.jsonl")
	existed := !start.IsZero()
	if !existed {
		start, existed = journalStart(path)
	}
	if !existed {
		start = now
	}
	j, err := obs.Create(s.dataDir, string(sc.CallID), start)
	if err != nil {
		return nil, time.Time{}
	}
	if !existed {
		j.Record(now, obs.Event{Type: obs.CallStart, Carrier: sc.Carrier, Direction: string(sc.Direction),
			CallerHash: sc.CallerHash, Caller: string(sc.Caller), Agent: s.agent})
	}
	return j, start
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
		c.record(now, obs.Event{Type: obs.BargeIn, Turn: last.turn, Text: heard})
	}
	c.record(now, obs.Event{Type: obs.TurnCommit, Turn: turn, Text: history[len(history)-1].Content})
	c.record(now, obs.Event{Type: obs.AgentRequest, Turn: turn})
	return unseen
}

// firstText records the turn's first text reaching the client.
func (c *conversation) firstText(turn int, now time.Time) {
	c.record(now, obs.Event{Type: obs.AgentFirstToken, Turn: turn})
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
		c.record(now, obs.Event{Type: obs.TurnInterrupted, Turn: turn})
	case err != nil:
		c.record(now, obs.Event{Type: obs.AgentError, Turn: turn, Kind: string(voice.KindOf(err)), Message: err.Error()})
	default:
		c.record(now, obs.Event{Type: obs.AgentDone, Turn: turn, Text: reply,
			InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens})
	}
}

// ended records that the session's call is over (a Retell call's socket closed).
func (c *conversation) ended(reason string, now time.Time) {
	c.record(now, obs.Event{Type: obs.CallEnd, Reason: reason})
}

// record journals e, when the session has a journal.
func (c *conversation) record(now time.Time, e obs.Event) {
	c.mu.Lock()
	j := c.journal
	c.mu.Unlock()
	j.Record(now, e)
}
