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

// Transcript search starts from the calls: it takes the newest calls passing the other
// filters (walkFirst of them) and keeps those with a matching line, which fills a page at
// once for a common word. When that page is short, a word on at most rareMatches lines is
// looked up from its lines (the GIN index) instead, and a commoner one walks on through the
// remaining calls.
// Variables so that a test can send every search down each path.
var (
	walkFirst   = 500 // at least; 10 a call of the page asked for
	walkPerCall = 10
	rareMatches = 2000
)

// lineMatches is the condition of a call having a transcript line that holds the words of
// the tsquery parameter p. The query is a subquery so that it is made once, not once a
// line (pgx prepares statements, and a generic plan would remake it for each).
func lineMatches(p string) string {
	return `EXISTS (SELECT 1 FROM transcript_lines tl WHERE tl.call_id = calls.id
		AND tl.search @@ (SELECT to_tsquery('simple', handset_search_fold(` + p + `))))`
}

// Calls lists the calls passing every filter of f, newest first, by an index for each
// filter (migration 0006) and keyset paging (no OFFSET).
func (s *Store) Calls(ctx context.Context, f store.ListCalls) ([]store.Call, error) {
	n := store.ListLimit(f.Limit, 50)
	words := store.SearchWords(f.Text)
	if len(words) == 0 {
		return s.listCalls(ctx, f, n, "", nil)
	}
	query := tsQuery(words)
	// The newest walkFirst calls, each checked for a matching line.
	first := max(walkFirst, walkPerCall*n)
	calls, err := s.listCalls(ctx, f, n, lineMatches("$?"), query, first)
	if err != nil || len(calls) == n {
		return calls, err
	}
	if candidates, err := s.listCalls(ctx, f, first, "", nil); err != nil || len(candidates) < first {
		return calls, err // every call was checked
	} else {
		last := candidates[len(candidates)-1]
		f.Before, f.BeforeID = last.StartedAt, last.ID
	}
	var hits int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM transcript_lines tl
		WHERE tl.search @@ (SELECT to_tsquery('simple', handset_search_fold($1))) LIMIT $2) AS hit`,
		query, rareMatches+1).Scan(&hits); err != nil {
		return nil, fmt.Errorf("postgres: list calls: search: %w", err)
	}
	var rest []store.Call
	if hits <= rareMatches {
		rest, err = s.listCalls(ctx, f, n-len(calls), `calls.id = ANY (ARRAY(SELECT tl.call_id FROM transcript_lines tl
			WHERE tl.search @@ (SELECT to_tsquery('simple', handset_search_fold($?)))))`, query)
	} else {
		rest, err = s.listCalls(ctx, f, n-len(calls), lineMatches("$?"), query)
	}
	return append(calls, rest...), err
}

// listCalls lists the calls passing f's filters other than Text, and cond (with its
// parameter arg, written $?, unless arg is nil), newest first, at most n. With within,
// only the newest within calls passing f's other filters are looked at.
func (s *Store) listCalls(ctx context.Context, f store.ListCalls, n int, cond string, arg any, within ...int) ([]store.Call, error) {
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
	const order = ` ORDER BY calls.started_at DESC, calls.id DESC`
	from := `calls`
	if len(within) > 0 {
		// The candidates first, then the condition on them alone.
		inner := `SELECT * FROM calls`
		if len(where) > 0 {
			inner += ` WHERE ` + strings.Join(where, " AND ")
		}
		args = append(args, within[0])
		from = `(` + inner + order + ` LIMIT $` + strconv.Itoa(len(args)) + `) AS calls`
		where = nil
	}
	switch {
	case arg != nil:
		add(cond, arg)
	case cond != "":
		add(cond)
	}
	q := `SELECT ` + callColumns + ` FROM ` + from
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, n)
	q += order + ` LIMIT $` + strconv.Itoa(len(args))
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
