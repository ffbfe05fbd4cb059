package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// SummarizeCall keeps what a call's journal said of it; ErrNotFound for an unknown call.
func (s *Store) SummarizeCall(ctx context.Context, id voice.CallID, sum store.CallSummary) error {
	res, err := s.w.ExecContext(ctx, `UPDATE calls SET summary_turns = ?, summary_interrupted = ?,
		summary_stage = ?, summary_problem = ? WHERE id = ?`,
		sum.Turns, sum.Interrupted, sum.Stage, sum.Problem, string(id))
	if err != nil {
		return fmt.Errorf("sqlite store: SummarizeCall %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	return fmt.Errorf("call %s: %w", id, store.ErrNotFound)
}

// rareMatches is the most transcript lines a search may match for Calls to start from
// them; a search matching more walks the calls newest first and checks each call's lines,
// which finds a page of them quickly because they are common.
const rareMatches = 2000

// Calls lists the calls passing every filter of f, newest first, by an index for each
// filter (migration 0006) and keyset paging (no OFFSET).
func (s *Store) Calls(ctx context.Context, f store.ListCalls) ([]store.Call, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, a ...any) { where, args = append(where, cond), append(args, a...) }
	if f.CallerHash != "" {
		add("calls.caller_hash = ?", f.CallerHash)
	}
	switch {
	case !f.Before.IsZero() && f.BeforeID != "":
		add("(calls.started_at, calls.id) < (?, ?)", encTime(f.Before), string(f.BeforeID))
	case !f.Before.IsZero():
		add("calls.started_at < ?", encTime(f.Before))
	}
	if !f.Since.IsZero() {
		add("calls.started_at >= ?", encTime(f.Since))
	}
	if f.Outcome != "" {
		add("calls.outcome = ?", f.Outcome)
	}
	if f.Carrier != "" {
		add("calls.carrier = ?", f.Carrier)
	}
	if f.Live {
		add("calls.ended_at IS NULL")
	}
	if f.Broken {
		add("calls.summary_stage <> ''")
	}
	from := `calls`
	if words := store.SearchWords(f.Text); len(words) > 0 {
		match := matchQuery(words)
		var n int
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM transcript_search
			WHERE transcript_search MATCH ? LIMIT ?)`, match, rareMatches+1).Scan(&n); err != nil {
			return nil, fmt.Errorf("sqlite store: Calls: search: %w", err)
		}
		if n <= rareMatches {
			// Few lines match: start from them (CROSS JOIN keeps that order) and sort the
			// few calls they belong to.
			from = `(SELECT DISTINCT tl.call_id FROM transcript_search JOIN transcript_lines tl ON tl.id = transcript_search.rowid
				WHERE transcript_search MATCH ?) AS hit CROSS JOIN calls ON calls.id = hit.call_id`
			args = append([]any{match}, args...)
		} else {
			add(`EXISTS (SELECT 1 FROM transcript_lines tl CROSS JOIN transcript_search
				WHERE tl.call_id = calls.id AND transcript_search.rowid = tl.id AND transcript_search MATCH ?)`, match)
		}
	}
	q := `SELECT ` + prefixed("calls.", callColumns) + ` FROM ` + from
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY calls.started_at DESC, calls.id DESC LIMIT ?`
	args = append(args, store.ListLimit(f.Limit, 50))
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: Calls: %w", err)
	}
	defer rows.Close()
	var out []store.Call
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: Calls: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// matchQuery is an FTS5 query for lines holding every word, the last one as a prefix. The
// words are letters and digits only (store.SearchWords), quoted all the same so that one
// spelling an FTS5 keyword (NEAR, AND, OR, NOT) is a plain word.
func matchQuery(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(`"` + strings.ReplaceAll(w, `"`, `""`) + `"`)
	}
	b.WriteByte('*')
	return b.String()
}

// prefixed qualifies each column of a comma-separated list with p ("calls.").
func prefixed(p, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

func limit(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// Sessions lists callers' sessions, most recently seen first, by keyset pages.
func (s *Store) Sessions(ctx context.Context, f store.ListSessions) ([]store.Session, error) {
	q := `SELECT ` + sessionColumns + ` FROM sessions`
	var args []any
	switch {
	case !f.Before.IsZero() && f.BeforeHash != "":
		q, args = q+` WHERE (last_seen, caller_hash) < (?, ?)`, []any{encTime(f.Before), f.BeforeHash}
	case !f.Before.IsZero():
		q, args = q+` WHERE last_seen < ?`, []any{encTime(f.Before)}
	}
	q += ` ORDER BY last_seen DESC, caller_hash DESC LIMIT ?`
	rows, err := s.r.QueryContext(ctx, q, append(args, store.ListLimit(f.Limit, 50))...)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: Sessions: %w", err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		ss, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: Sessions: %w", err)
		}
		out = append(out, ss)
	}
	return out, rows.Err()
}

// Batches lists the batches of jobs, the most recently active first.
func (s *Store) Batches(ctx context.Context, n int) ([]store.Batch, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT batch,
			sum(state = 'pending'), sum(state = 'running'), sum(state = 'completed'), sum(state = 'failed'),
			min(created_at), max(updated_at)
		FROM jobs WHERE batch <> '' GROUP BY batch
		ORDER BY max(updated_at) DESC, batch LIMIT ?`, store.ListLimit(n, 50))
	if err != nil {
		return nil, fmt.Errorf("sqlite store: Batches: %w", err)
	}
	defer rows.Close()
	var out []store.Batch
	for rows.Next() {
		var (
			b           store.Batch
			first, last sql.NullString
		)
		if err := rows.Scan(&b.Name, &b.Pending, &b.Running, &b.Completed, &b.Failed, &first, &last); err != nil {
			return nil, fmt.Errorf("sqlite store: Batches: %w", err)
		}
		if b.First, err = decTime(first); err != nil {
			return nil, err
		}
		if b.Last, err = decTime(last); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
