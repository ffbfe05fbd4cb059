package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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
// them; a search matching more takes the calls newest first, a batch at a time, and keeps
// those with a matching line (searchCommon).
var rareMatches = 2000 // a variable so that a test can send every search down each path

// Calls lists the calls passing every filter of f, newest first, by an index for each
// filter (migration 0006) and keyset paging (no OFFSET).
func (s *Store) Calls(ctx context.Context, f store.ListCalls) ([]store.Call, error) {
	n := store.ListLimit(f.Limit, 50)
	words := store.SearchWords(f.Text)
	if len(words) == 0 {
		return s.listCalls(ctx, `calls`, nil, f, n)
	}
	match, err := s.matchQuery(ctx, words)
	if err != nil || match == "" {
		return nil, err
	}
	var hits int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM transcript_search
		WHERE transcript_search MATCH ? LIMIT ?)`, match, rareMatches+1).Scan(&hits); err != nil {
		return nil, fmt.Errorf("sqlite store: Calls: search: %w", err)
	}
	if hits > rareMatches {
		return s.searchCommon(ctx, match, f, n)
	}
	// Few lines match: start from them (CROSS JOIN keeps that order) and sort the few
	// calls they belong to.
	return s.listCalls(ctx, `(SELECT DISTINCT tl.call_id FROM transcript_search
			JOIN transcript_lines tl ON tl.id = transcript_search.rowid
			WHERE transcript_search MATCH ?) AS hit CROSS JOIN calls ON calls.id = hit.call_id`,
		[]any{match}, f, n)
}

// listCalls is SELECT … FROM from (whose parameters are fromArgs) with f's filters other
// than Text, newest first, at most n.
func (s *Store) listCalls(ctx context.Context, from string, fromArgs []any, f store.ListCalls, n int) ([]store.Call, error) {
	where, args := []string{}, fromArgs
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
	q := `SELECT ` + prefixed("calls.", callColumns) + ` FROM ` + from
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY calls.started_at DESC, calls.id DESC LIMIT ?`
	rows, err := s.r.QueryContext(ctx, q, append(args, n)...)
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

// searchCommon lists the calls passing f with a line matching match, a word on many
// lines: it takes the calls passing the other filters newest first, a growing batch at a
// time, and keeps those with a matching line among the batch's lines. One full-text query
// per batch, bounded by the batch's line ids, rather than one per call: FTS5 expands a
// prefix afresh for every query.
func (s *Store) searchCommon(ctx context.Context, match string, f store.ListCalls, n int) ([]store.Call, error) {
	var out []store.Call
	for batch := max(16*n, 256); ; batch = min(4*batch, 8192) {
		calls, err := s.listCalls(ctx, `calls`, nil, f, batch)
		if err != nil || len(calls) == 0 {
			return out, err
		}
		ids := make([]string, len(calls))
		for i, c := range calls {
			ids[i] = string(c.ID)
		}
		list, _ := json.Marshal(ids)
		rows, err := s.r.QueryContext(ctx, `WITH span AS (SELECT min(id) AS lo, max(id) AS hi FROM transcript_lines
				WHERE call_id IN (SELECT value FROM json_each(?)))
			SELECT DISTINCT tl.call_id FROM span CROSS JOIN transcript_search CROSS JOIN transcript_lines tl
			WHERE transcript_search MATCH ? AND transcript_search.rowid BETWEEN span.lo AND span.hi
				AND tl.id = transcript_search.rowid`, string(list), match)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: Calls: search: %w", err)
		}
		matched := map[string]bool{}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite store: Calls: search: %w", err)
			}
			matched[id] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("sqlite store: Calls: search: %w", err)
		}
		for _, c := range calls {
			if matched[string(c.ID)] {
				if out = append(out, c); len(out) == n {
					return out, nil
				}
			}
		}
		if len(calls) < batch {
			return out, nil
		}
		last := calls[len(calls)-1]
		f.Before, f.BeforeID = last.StartedAt, last.ID
	}
}

// maxPrefixTerms is the most words a search spells out for its last word's prefix.
var maxPrefixTerms = 64 // a variable so that a test can do without

// matchQuery is an FTS5 query for lines holding every word, the last one as a prefix;
// empty when no line can match. The words are letters and digits only
// (store.SearchWords), quoted all the same so that one spelling an FTS5 keyword (NEAR, AND,
// OR, NOT) is a plain word. FTS5 reads a whole prefix's lines for every query (each batch
// of searchCommon), so the prefix is spelt out as the indexed words it starts, when they
// are few and the prefix is plain ASCII (folded as the index folds it: lowercased).
func (s *Store) matchQuery(ctx context.Context, words []string) (string, error) {
	quote := func(w string) string { return `"` + strings.ReplaceAll(w, `"`, `""`) + `"` }
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = quote(w)
	}
	last := words[len(words)-1]
	parts[len(parts)-1] += "*"
	if !ascii(last) {
		return strings.Join(parts, " AND "), nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT term FROM transcript_terms WHERE term >= ? AND term < ?
		ORDER BY term LIMIT ?`, last, last+"\U0010FFFF", maxPrefixTerms+1)
	if err != nil {
		return "", fmt.Errorf("sqlite store: Calls: search terms: %w", err)
	}
	defer rows.Close()
	var terms []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return "", fmt.Errorf("sqlite store: Calls: search terms: %w", err)
		}
		terms = append(terms, quote(t))
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("sqlite store: Calls: search terms: %w", err)
	}
	switch {
	case len(terms) == 0:
		return "", nil // no indexed word starts so
	case len(terms) <= maxPrefixTerms:
		parts[len(parts)-1] = "(" + strings.Join(terms, " OR ") + ")"
	}
	return strings.Join(parts, " AND "), nil
}

func ascii(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= 0x80 {
			return false
		}
	}
	return true
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
