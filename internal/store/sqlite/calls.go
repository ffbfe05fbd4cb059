package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

const callColumns = `id, carrier, carrier_ref, direction, from_number, to_number, caller_hash, agent, node,
	started_at, ended_at, outcome, journal, job_id, summary_turns, summary_interrupted, summary_stage, summary_problem`

// StartCall records a new call; ErrDuplicate when its id is taken.
func (s *Store) StartCall(ctx context.Context, c store.Call) error {
	if c.ID == "" {
		return errors.New("sqlite store: StartCall: empty call id")
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO calls (`+callColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		string(c.ID), c.Carrier, c.CarrierRef, string(c.Direction), c.From, c.To, c.CallerHash, c.Agent, c.Node,
		encTime(c.StartedAt), encTime(c.EndedAt), c.Outcome, c.Journal, c.JobID,
		c.Summary.Turns, c.Summary.Interrupted, c.Summary.Stage, c.Summary.Problem)
	if err != nil {
		return fmt.Errorf("sqlite store: StartCall %s: %w", c.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("call %s: %w", c.ID, store.ErrDuplicate)
	}
	return nil
}

// UpdateCall sets the non-empty fields of u.
func (s *Store) UpdateCall(ctx context.Context, id voice.CallID, u store.CallUpdate) error {
	res, err := s.w.ExecContext(ctx, `UPDATE calls SET
			carrier_ref = CASE WHEN ? <> '' THEN ? ELSE carrier_ref END,
			node = CASE WHEN ? <> '' THEN ? ELSE node END,
			journal = CASE WHEN ? <> '' THEN ? ELSE journal END
		WHERE id = ?`, u.CarrierRef, u.CarrierRef, u.Node, u.Node, u.Journal, u.Journal, string(id))
	if err != nil {
		return fmt.Errorf("sqlite store: UpdateCall %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	return fmt.Errorf("call %s: %w", id, store.ErrNotFound)
}

// EndCall sets EndedAt and Outcome of a running call. A call already ended keeps its first
// end (a carrier's status callback may race the engine's own end); ErrNotFound for an
// unknown call.
func (s *Store) EndCall(ctx context.Context, id voice.CallID, endedAt time.Time, outcome string) error {
	res, err := s.w.ExecContext(ctx, `UPDATE calls SET ended_at = ?, outcome = ? WHERE id = ? AND ended_at IS NULL`,
		encTime(endedAt), outcome, string(id))
	if err != nil {
		return fmt.Errorf("sqlite store: EndCall %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	if _, err := s.Call(ctx, id); err != nil {
		return err
	}
	return nil
}

type scanner interface{ Scan(dest ...any) error }

func scanCall(sc scanner) (store.Call, error) {
	var (
		c              store.Call
		id, dir        string
		started, ended sql.NullString
	)
	err := sc.Scan(&id, &c.Carrier, &c.CarrierRef, &dir, &c.From, &c.To, &c.CallerHash, &c.Agent, &c.Node,
		&started, &ended, &c.Outcome, &c.Journal, &c.JobID,
		&c.Summary.Turns, &c.Summary.Interrupted, &c.Summary.Stage, &c.Summary.Problem)
	if err != nil {
		return store.Call{}, err
	}
	c.ID, c.Direction = voice.CallID(id), voice.Direction(dir)
	if c.StartedAt, err = decTime(started); err != nil {
		return store.Call{}, err
	}
	if c.EndedAt, err = decTime(ended); err != nil {
		return store.Call{}, err
	}
	return c, nil
}

// Call returns one call; ErrNotFound when unknown.
func (s *Store) Call(ctx context.Context, id voice.CallID) (store.Call, error) {
	c, err := scanCall(s.r.QueryRowContext(ctx, `SELECT `+callColumns+` FROM calls WHERE id = ?`, string(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Call{}, fmt.Errorf("call %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Call{}, fmt.Errorf("sqlite store: Call %s: %w", id, err)
	}
	return c, nil
}

// AppendTranscript adds lines, in one transaction; ErrNotFound when a line's call is
// unknown.
func (s *Store) AppendTranscript(ctx context.Context, lines []store.TranscriptLine) (err error) {
	if len(lines) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite store: AppendTranscript: %w", err)
	}
	defer rollback(tx, &err)
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO transcript_lines (call_id, turn, role, text, at, interrupted)
		VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("sqlite store: AppendTranscript: %w", err)
	}
	defer stmt.Close()
	for _, l := range lines {
		if _, err = stmt.ExecContext(ctx, string(l.CallID), l.Turn, string(l.Role), l.Text, encTime(l.At), l.Interrupted); err != nil {
			if isForeignKey(err) {
				return fmt.Errorf("transcript of call %s: %w", l.CallID, store.ErrNotFound)
			}
			return fmt.Errorf("sqlite store: AppendTranscript: %w", err)
		}
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("sqlite store: AppendTranscript: %w", err)
	}
	return nil
}

// Transcript returns a call's lines by turn, then time, then the order they were added.
// A call without lines (or an unknown call) has an empty transcript.
func (s *Store) Transcript(ctx context.Context, id voice.CallID) ([]store.TranscriptLine, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT call_id, turn, role, text, at, interrupted FROM transcript_lines
		WHERE call_id = ? ORDER BY turn, at, id`, string(id))
	if err != nil {
		return nil, fmt.Errorf("sqlite store: Transcript %s: %w", id, err)
	}
	defer rows.Close()
	var out []store.TranscriptLine
	for rows.Next() {
		var (
			l          store.TranscriptLine
			callID, rl string
			when       sql.NullString
		)
		if err := rows.Scan(&callID, &l.Turn, &rl, &l.Text, &when, &l.Interrupted); err != nil {
			return nil, fmt.Errorf("sqlite store: Transcript %s: %w", id, err)
		}
		l.CallID, l.Role = voice.CallID(callID), voice.Role(rl)
		if l.At, err = decTime(when); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

const sessionColumns = `caller_hash, session_key, first_seen, last_seen, calls, last_call`

func scanSession(sc scanner) (store.Session, error) {
	var (
		ss          store.Session
		first, last sql.NullString
		lastCall    string
	)
	err := sc.Scan(&ss.CallerHash, &ss.SessionKey, &first, &last, &ss.Calls, &lastCall)
	if err != nil {
		return store.Session{}, err
	}
	ss.LastCall = voice.CallID(lastCall)
	if ss.FirstSeen, err = decTime(first); err != nil {
		return store.Session{}, err
	}
	if ss.LastSeen, err = decTime(last); err != nil {
		return store.Session{}, err
	}
	return ss, nil
}

// TouchSession creates callerHash's session or bumps it, in one upsert.
func (s *Store) TouchSession(ctx context.Context, callerHash, sessionKey string, call voice.CallID, at time.Time) (store.Session, error) {
	if callerHash == "" {
		return store.Session{}, errors.New("sqlite store: TouchSession: empty caller hash")
	}
	ss, err := scanSession(s.w.QueryRowContext(ctx, `INSERT INTO sessions (`+sessionColumns+`)
		VALUES (?, ?, ?, ?, 1, ?)
		ON CONFLICT (caller_hash) DO UPDATE SET
			session_key = CASE WHEN excluded.session_key <> '' THEN excluded.session_key ELSE sessions.session_key END,
			last_seen = excluded.last_seen,
			calls = sessions.calls + 1,
			last_call = excluded.last_call
		RETURNING `+sessionColumns,
		callerHash, sessionKey, encTime(at), encTime(at), string(call)))
	if err != nil {
		return store.Session{}, fmt.Errorf("sqlite store: TouchSession: %w", err)
	}
	return ss, nil
}

// Session returns callerHash's session; ErrNotFound when it never called.
func (s *Store) Session(ctx context.Context, callerHash string) (store.Session, error) {
	ss, err := scanSession(s.r.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE caller_hash = ?`, callerHash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session of caller %s: %w", callerHash, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("sqlite store: Session: %w", err)
	}
	return ss, nil
}

// SessionByKey returns the session filed under sessionKey (the most recently seen one, if
// a key template made several callers share it); ErrNotFound when none is.
func (s *Store) SessionByKey(ctx context.Context, sessionKey string) (store.Session, error) {
	if sessionKey == "" {
		return store.Session{}, fmt.Errorf("session with an empty key: %w", store.ErrNotFound)
	}
	ss, err := scanSession(s.r.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions
		WHERE session_key = ? ORDER BY last_seen DESC LIMIT 1`, sessionKey))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session %s: %w", sessionKey, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("sqlite store: SessionByKey: %w", err)
	}
	return ss, nil
}

// SharedSecret returns name's value, storing candidate first when there is none.
func (s *Store) SharedSecret(ctx context.Context, name, candidate string) (string, error) {
	if name == "" || candidate == "" {
		return "", errors.New("sqlite store: SharedSecret: empty name or candidate")
	}
	var v string
	err := s.w.QueryRowContext(ctx, `INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING value`,
		name, candidate, encTime(time.Now())).Scan(&v)
	if err != nil {
		return "", fmt.Errorf("sqlite store: SharedSecret %s: %w", name, err)
	}
	return v, nil
}
