package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// SummarizeCall keeps what a call's journal said of it; ErrNotFound for an unknown call.
func (s *Store) SummarizeCall(ctx context.Context, id voice.CallID, sum store.CallSummary) error {
	tag, err := s.pool.Exec(ctx, `UPDATE calls SET summary_turns = $2, summary_interrupted = $3,
		summary_stage = $4, summary_problem = $5 WHERE id = $1`,
		string(id), int32(sum.Turns), int32(sum.Interrupted), sum.Stage, sum.Problem)
	if err != nil {
		return fmt.Errorf("postgres: summarize call %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: summarize call %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// rareMatches is the most transcript lines a search may match for Calls to start from
// them; a search matching more walks the calls newest first and checks each call's lines,
// which finds a page of them quickly because they are common.
const rareMatches = 2000

// lineMatches is the condition a transcript line (tl) meets when it holds the words of the
// tsquery parameter p; it is the expression migration 0006 indexes.
func lineMatches(p string) string {
	return `to_tsvector('simple', handset_search_fold(tl.text)) @@ to_tsquery('simple', handset_search_fold(` + p + `))`
}

// Calls lists the calls passing every filter of f, newest first, by an index for each
// filter (migration 0006) and keyset paging (no OFFSET).
func (s *Store) Calls(ctx context.Context, f store.ListCalls) ([]store.Call, error) {
	var (
		where []string
		args  []any
	)
	// add appends a condition whose parameters are written $? in order.
	add := func(cond string, a ...any) {
		for _, v := range a {
			args = append(args, v)
			cond = strings.Replace(cond, "$?", "$"+strconv.Itoa(len(args)), 1)
		}
		where = append(where, cond)
	}
	if f.CallerHash != "" {
		add("calls.caller_hash = $?", f.CallerHash)
	}
	switch {
	case !f.Before.IsZero() && f.BeforeID != "":
		add("(calls.started_at, calls.id) < ($?, $?)", f.Before.UTC(), string(f.BeforeID))
	case !f.Before.IsZero():
		add("calls.started_at < $?", f.Before.UTC())
	}
	if !f.Since.IsZero() {
		add("calls.started_at >= $?", f.Since.UTC())
	}
	if f.Outcome != "" {
		add("calls.outcome = $?", f.Outcome)
	}
	if f.Carrier != "" {
		add("calls.carrier = $?", f.Carrier)
	}
	if f.Live {
		add("calls.ended_at IS NULL")
	}
	if f.Broken {
		add("calls.summary_stage <> ''")
	}
	if words := store.SearchWords(f.Text); len(words) > 0 {
		query := tsQuery(words)
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM transcript_lines tl
			WHERE `+lineMatches("$1")+` LIMIT $2) AS hit`, query, rareMatches+1).Scan(&n); err != nil {
			return nil, fmt.Errorf("postgres: list calls: search: %w", err)
		}
		if n <= rareMatches {
			// Few lines match: start from them (the full-text index) and sort their calls.
			add(`calls.id = ANY (ARRAY(SELECT tl.call_id FROM transcript_lines tl WHERE `+lineMatches("$?")+`))`, query)
		} else {
			// Many do: walk the calls newest first and look at each one's lines (OFFSET 0
			// keeps the planner from turning this into a scan of every matching line).
			add(`EXISTS (SELECT 1 FROM transcript_lines tl WHERE tl.call_id = calls.id AND `+lineMatches("$?")+` OFFSET 0)`, query)
		}
	}
	q := `SELECT ` + callColumns + ` FROM calls`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, store.ListLimit(f.Limit, 50))
	q += ` ORDER BY calls.started_at DESC, calls.id DESC LIMIT $` + strconv.Itoa(len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list calls: %w", err)
	}
	calls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Call, error) { return scanCall(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list calls: %w", err)
	}
	return calls, nil
}

// tsQuery is a tsquery for lines holding every word, the last one as a prefix. The words
// are letters, digits and marks only (store.SearchWords), so quoting each as a lexeme
// leaves no tsquery syntax in them.
func tsQuery(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", "''") + "'"
	}
	return strings.Join(quoted, " & ") + ":*"
}

// Sessions lists callers' sessions, most recently seen first, by keyset pages.
func (s *Store) Sessions(ctx context.Context, f store.ListSessions) ([]store.Session, error) {
	q, args := `SELECT `+sessionColumns+` FROM sessions`, []any{store.ListLimit(f.Limit, 50)}
	switch {
	case !f.Before.IsZero() && f.BeforeHash != "":
		q, args = q+` WHERE (last_seen, caller_hash) < ($2, $3)`, append(args, f.Before.UTC(), f.BeforeHash)
	case !f.Before.IsZero():
		q, args = q+` WHERE last_seen < $2`, append(args, f.Before.UTC())
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY last_seen DESC, caller_hash DESC LIMIT $1`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	sessions, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Session, error) { return scanSession(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	return sessions, nil
}

// Batches lists the batches of jobs, the most recently active first.
func (s *Store) Batches(ctx context.Context, n int) ([]store.Batch, error) {
	rows, err := s.pool.Query(ctx, `SELECT batch,
			count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'running'),
			count(*) FILTER (WHERE state = 'completed'), count(*) FILTER (WHERE state = 'failed'),
			min(created_at), max(updated_at)
		FROM jobs WHERE batch <> '' GROUP BY batch
		ORDER BY max(updated_at) DESC, batch LIMIT $1`, store.ListLimit(n, 50))
	if err != nil {
		return nil, fmt.Errorf("postgres: list batches: %w", err)
	}
	batches, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Batch, error) {
		var (
			b                                   store.Batch
			pending, running, completed, failed int64
			first, last                         time.Time
		)
		err := r.Scan(&b.Name, &pending, &running, &completed, &failed, &first, &last)
		b.Pending, b.Running, b.Completed, b.Failed = int(pending), int(running), int(completed), int(failed)
		b.First, b.Last = first.UTC(), last.UTC()
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list batches: %w", err)
	}
	return batches, nil
}
