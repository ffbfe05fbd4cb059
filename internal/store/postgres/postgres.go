// Package postgres is the PostgreSQL implementation of store.Store (pgx/v5, pgxpool), for
// several Handset nodes sharing one database. Open migrates the schema (embedded SQL files,
// under an advisory lock so nodes starting together migrate once). Jobs are claimed with
// SELECT … FOR UPDATE SKIP LOCKED, and every job transition is an UPDATE guarded by the
// job's id, state and lease owner, so a node whose lease expired cannot overwrite the work
// of the node that reclaimed it.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Store is a store.Store on PostgreSQL. Safe for concurrent use, and for several processes.
type Store struct {
	pool *pgxpool.Pool
}

var _ store.Store = (*Store)(nil)

// Open connects to url (postgres://user@host:port/db?sslmode=…), checks the connection and
// migrates the schema. It refuses a database migrated by a newer Handset (ErrSchemaTooNew).
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect %s@%s:%d/%s: %w", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{pool: pool}, nil
}

// Close closes the pool, waiting for connections in use to be released.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// ---- helpers

// ts is t for a timestamptz parameter: NULL when zero, else UTC (PostgreSQL keeps
// microseconds; pgx truncates the rest).
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// fromTS turns a scanned nullable timestamptz back into a time (zero for NULL), in UTC.
func fromTS(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505"
}

func isForeignKeyViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23503"
}

func notFound(err error, what string, id any) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: %s %v: %w", what, id, store.ErrNotFound)
	}
	return fmt.Errorf("postgres: %s %v: %w", what, id, err)
}

// ---- calls

const callColumns = `id, carrier, carrier_ref, direction, from_number, to_number, caller_hash, agent, node, started_at, ended_at, outcome, journal, job_id,
	summary_turns, summary_interrupted, summary_stage, summary_problem`

func scanCall(row pgx.Row) (store.Call, error) {
	var c store.Call
	var started time.Time
	var ended *time.Time
	var turns, interrupted int32
	err := row.Scan(&c.ID, &c.Carrier, &c.CarrierRef, &c.Direction, &c.From, &c.To, &c.CallerHash,
		&c.Agent, &c.Node, &started, &ended, &c.Outcome, &c.Journal, &c.JobID,
		&turns, &interrupted, &c.Summary.Stage, &c.Summary.Problem)
	c.StartedAt, c.EndedAt = started.UTC(), fromTS(ended)
	c.Summary.Turns, c.Summary.Interrupted = int(turns), int(interrupted)
	return c, err
}

// StartCall records a new call; ErrDuplicate when its ID is taken.
func (s *Store) StartCall(ctx context.Context, c store.Call) error {
	if c.ID == "" {
		return errors.New("postgres: start call: empty id")
	}
	started := c.StartedAt
	if started.IsZero() {
		started = time.Now()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO calls (`+callColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
		string(c.ID), c.Carrier, c.CarrierRef, string(c.Direction), c.From, c.To, c.CallerHash,
		c.Agent, c.Node, started.UTC(), ts(c.EndedAt), c.Outcome, c.Journal, c.JobID,
		int32(c.Summary.Turns), int32(c.Summary.Interrupted), c.Summary.Stage, c.Summary.Problem)
	if isUniqueViolation(err) {
		return fmt.Errorf("postgres: start call %s: %w", c.ID, store.ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("postgres: start call %s: %w", c.ID, err)
	}
	return nil
}

// UpdateCall sets the non-empty fields of u.
func (s *Store) UpdateCall(ctx context.Context, id voice.CallID, u store.CallUpdate) error {
	tag, err := s.pool.Exec(ctx, `UPDATE calls SET
			carrier_ref = CASE WHEN $2 <> '' THEN $2 ELSE carrier_ref END,
			node = CASE WHEN $3 <> '' THEN $3 ELSE node END,
			journal = CASE WHEN $4 <> '' THEN $4 ELSE journal END
		WHERE id = $1`, string(id), u.CarrierRef, u.Node, u.Journal)
	if err != nil {
		return fmt.Errorf("postgres: update call %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: update call %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// EndCall sets a call's end time and outcome. A call already ended keeps its first end.
func (s *Store) EndCall(ctx context.Context, id voice.CallID, endedAt time.Time, outcome string) error {
	if endedAt.IsZero() {
		endedAt = time.Now()
	}
	tag, err := s.pool.Exec(ctx, `UPDATE calls SET ended_at = $2, outcome = $3 WHERE id = $1 AND ended_at IS NULL`,
		string(id), endedAt.UTC(), outcome)
	if err != nil {
		return fmt.Errorf("postgres: end call %s: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	_, err = s.Call(ctx, id)
	return err
}

// Call returns one call; ErrNotFound when there is none with that id.
func (s *Store) Call(ctx context.Context, id voice.CallID) (store.Call, error) {
	c, err := scanCall(s.pool.QueryRow(ctx, `SELECT `+callColumns+` FROM calls WHERE id = $1`, string(id)))
	if err != nil {
		return store.Call{}, notFound(err, "call", id)
	}
	return c, nil
}

// AppendTranscript adds lines to their calls' transcripts, all or none.
func (s *Store) AppendTranscript(ctx context.Context, lines []store.TranscriptLine) error {
	if len(lines) == 0 {
		return nil
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"transcript_lines"},
		[]string{"call_id", "turn", "role", "text", "at", "interrupted"},
		pgx.CopyFromSlice(len(lines), func(i int) ([]any, error) {
			l := lines[i]
			at := l.At
			if at.IsZero() {
				at = time.Now()
			}
			return []any{string(l.CallID), int32(l.Turn), string(l.Role), l.Text, at.UTC(), l.Interrupted}, nil
		}))
	if isForeignKeyViolation(err) {
		return fmt.Errorf("postgres: append transcript: a line's call is unknown: %w", store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("postgres: append transcript: %w", err)
	}
	return nil
}

// Transcript returns a call's lines by turn, then time, then the order they were added.
func (s *Store) Transcript(ctx context.Context, id voice.CallID) ([]store.TranscriptLine, error) {
	rows, err := s.pool.Query(ctx, `SELECT call_id, turn, role, text, at, interrupted FROM transcript_lines
		WHERE call_id = $1 ORDER BY turn, at, seq`, string(id))
	if err != nil {
		return nil, fmt.Errorf("postgres: transcript %s: %w", id, err)
	}
	lines, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.TranscriptLine, error) {
		var l store.TranscriptLine
		var turn int32
		err := r.Scan(&l.CallID, &turn, &l.Role, &l.Text, &l.At, &l.Interrupted)
		l.Turn, l.At = int(turn), l.At.UTC()
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: transcript %s: %w", id, err)
	}
	return lines, nil
}

// ---- sessions

const sessionColumns = `caller_hash, session_key, first_seen, last_seen, calls, last_call`

func scanSession(row pgx.Row) (store.Session, error) {
	var ss store.Session
	var calls int32
	err := row.Scan(&ss.CallerHash, &ss.SessionKey, &ss.FirstSeen, &ss.LastSeen, &calls, &ss.LastCall)
	ss.Calls, ss.FirstSeen, ss.LastSeen = int(calls), ss.FirstSeen.UTC(), ss.LastSeen.UTC()
	return ss, err
}

// TouchSession creates callerHash's session or bumps it (one statement, so concurrent
// touches of the same caller all count).
func (s *Store) TouchSession(ctx context.Context, callerHash, sessionKey string, call voice.CallID, at time.Time) (store.Session, error) {
	if callerHash == "" {
		return store.Session{}, errors.New("postgres: touch session: empty caller hash")
	}
	if at.IsZero() {
		at = time.Now()
	}
	ss, err := scanSession(s.pool.QueryRow(ctx, `INSERT INTO sessions AS s (`+sessionColumns+`)
		VALUES ($1, $2, $3, $3, 1, $4)
		ON CONFLICT (caller_hash) DO UPDATE SET
			session_key = CASE WHEN excluded.session_key <> '' THEN excluded.session_key ELSE s.session_key END,
			first_seen = least(s.first_seen, excluded.first_seen),
			last_seen = greatest(s.last_seen, excluded.last_seen),
			calls = s.calls + 1,
			last_call = excluded.last_call
		RETURNING `+sessionColumns, callerHash, sessionKey, at.UTC(), string(call)))
	if err != nil {
		return store.Session{}, fmt.Errorf("postgres: touch session: %w", err)
	}
	return ss, nil
}

// Session returns callerHash's session; ErrNotFound when the caller is new.
func (s *Store) Session(ctx context.Context, callerHash string) (store.Session, error) {
	ss, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE caller_hash = $1`, callerHash))
	if err != nil {
		return store.Session{}, notFound(err, "session", callerHash)
	}
	return ss, nil
}

// SessionByKey returns the session using sessionKey (the most recently seen one, should
// several callers share it); ErrNotFound when none does.
func (s *Store) SessionByKey(ctx context.Context, sessionKey string) (store.Session, error) {
	if sessionKey == "" {
		return store.Session{}, fmt.Errorf("postgres: session by key \"\": %w", store.ErrNotFound)
	}
	ss, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions
		WHERE session_key = $1 ORDER BY last_seen DESC, caller_hash LIMIT 1`, sessionKey))
	if err != nil {
		return store.Session{}, notFound(err, "session by key", sessionKey)
	}
	return ss, nil
}

// SharedSecret returns name's value, storing candidate first when there is none. The
// no-op update makes RETURNING give the stored row under a conflict too.
func (s *Store) SharedSecret(ctx context.Context, name, candidate string) (string, error) {
	if name == "" || candidate == "" {
		return "", errors.New("postgres: shared secret: empty name or candidate")
	}
	var v string
	err := s.pool.QueryRow(ctx, `INSERT INTO secrets (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING value`, name, candidate).Scan(&v)
	if err != nil {
		return "", fmt.Errorf("postgres: shared secret %s: %w", name, err)
	}
	return v, nil
}
