package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/store"
)

const jobColumns = `id, kind, payload, state, attempts, max_attempts, run_at, lease_owner, lease_until,
	result, error, dedupe_key, batch, node, checkpoint, version, created_at, updated_at`

func scanJob(sc scanner) (store.Job, error) {
	var (
		j                                   store.Job
		state                               string
		dedupe                              sql.NullString
		runAt, leaseUntil, created, updated sql.NullString
	)
	err := sc.Scan(&j.ID, &j.Kind, &j.Payload, &state, &j.Attempts, &j.MaxAttempts, &runAt, &j.LeaseOwner, &leaseUntil,
		&j.Result, &j.Error, &dedupe, &j.Batch, &j.Node, &j.Checkpoint, &j.Version, &created, &updated)
	if err != nil {
		return store.Job{}, err
	}
	j.State, j.DedupeKey = store.JobState(state), dedupe.String
	for _, f := range []struct {
		dst *time.Time
		src sql.NullString
	}{{&j.RunAt, runAt}, {&j.LeaseUntil, leaseUntil}, {&j.CreatedAt, created}, {&j.UpdatedAt, updated}} {
		if *f.dst, err = decTime(f.src); err != nil {
			return store.Job{}, err
		}
	}
	return j, nil
}

// Enqueue adds a pending job. MaxAttempts defaults to 3 and a zero RunAt means now;
// ErrDuplicate when DedupeKey was used before (by any job, finished or not).
func (s *Store) Enqueue(ctx context.Context, nj store.NewJob) (store.Job, error) {
	if nj.Kind == "" {
		return store.Job{}, errors.New("sqlite store: Enqueue: empty job kind")
	}
	if nj.MaxAttempts <= 0 {
		nj.MaxAttempts = 3
	}
	now := time.Now()
	if nj.RunAt.IsZero() {
		nj.RunAt = now
	}
	j, err := scanJob(s.w.QueryRowContext(ctx, `INSERT INTO jobs
		(kind, payload, state, attempts, max_attempts, run_at, dedupe_key, batch, node, version, created_at, updated_at)
		VALUES (?, ?, 'pending', 0, ?, ?, ?, ?, ?, 1, ?, ?)
		ON CONFLICT (dedupe_key) DO NOTHING
		RETURNING `+jobColumns,
		nj.Kind, nj.Payload, nj.MaxAttempts, encTime(nj.RunAt), nullString(nj.DedupeKey), nj.Batch, nj.Node,
		encTime(now), encTime(now)))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Job{}, fmt.Errorf("job with dedupe key %q: %w", nj.DedupeKey, store.ErrDuplicate)
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("sqlite store: Enqueue: %w", err)
	}
	return j, nil
}

// claimFilter is " AND node IN (”, owner) AND kind IN (?, …)": the jobs owner may claim,
// of kinds (all kinds when empty).
func claimFilter(owner string, kinds []string) (string, []any) {
	args := []any{owner}
	f := " AND node IN ('', ?)"
	if len(kinds) == 0 {
		return f, args
	}
	for _, k := range kinds {
		args = append(args, k)
	}
	return f + " AND kind IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(kinds)), ", ") + ")", args
}

// Claim leases the next due job (pending with RunAt come, or running with its lease
// expired) to owner, in one BEGIN IMMEDIATE transaction: the select and the update cannot
// interleave with another writer, in this process or another. A running job whose lease
// expired on its last attempt is not reclaimed past MaxAttempts: Claim fails it for good.
func (s *Store) Claim(ctx context.Context, owner string, kinds []string, lease time.Duration, now time.Time) (j store.Job, ok bool, err error) {
	if owner == "" {
		return store.Job{}, false, errors.New("sqlite store: Claim: empty owner")
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return store.Job{}, false, fmt.Errorf("sqlite store: Claim: %w", err)
	}
	defer rollback(tx, &err)
	kf, kargs := claimFilter(owner, kinds)
	nowS := encTime(now)

	// A dead node's job on its last attempt: failed, not run a MaxAttempts+1st time.
	if _, err = tx.ExecContext(ctx, `UPDATE jobs SET state = 'failed', lease_until = NULL,
			error = 'lease expired on the last attempt (owner ' || lease_owner || ')',
			version = version + 1, updated_at = ?
		WHERE state = 'running' AND lease_until <= ? AND attempts >= max_attempts`+kf,
		append([]any{nowS, nowS}, kargs...)...); err != nil {
		return store.Job{}, false, fmt.Errorf("sqlite store: Claim: %w", err)
	}

	var id, version int64
	err = tx.QueryRowContext(ctx, `SELECT id, version FROM jobs
		WHERE ((state = 'pending' AND run_at <= ?) OR (state = 'running' AND lease_until <= ?))`+kf+`
		ORDER BY run_at, id LIMIT 1`,
		append([]any{nowS, nowS}, kargs...)...).Scan(&id, &version)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.Commit() // keeps the failures above
		return store.Job{}, false, err
	}
	if err != nil {
		return store.Job{}, false, fmt.Errorf("sqlite store: Claim: %w", err)
	}
	j, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET state = 'running', lease_owner = ?, lease_until = ?,
			attempts = attempts + 1, version = version + 1, updated_at = ?
		WHERE id = ? AND version = ?
		RETURNING `+jobColumns,
		owner, encTime(now.Add(lease)), nowS, id, version))
	if errors.Is(err, sql.ErrNoRows) { // cannot happen inside the write transaction
		err = fmt.Errorf("sqlite store: Claim: job %d changed under the transaction", id)
	}
	if err != nil {
		return store.Job{}, false, fmt.Errorf("sqlite store: Claim: %w", err)
	}
	if err = tx.Commit(); err != nil {
		return store.Job{}, false, fmt.Errorf("sqlite store: Claim: %w", err)
	}
	return j, true, nil
}

// leaseLost explains why a transition on job id by owner changed nothing: the job is
// unknown (ErrNotFound) or not running under owner's lease (ErrLeaseLost).
func (s *Store) leaseLost(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id int64, owner string) error {
	var (
		state, leaseOwner string
	)
	err := q.QueryRowContext(ctx, `SELECT state, lease_owner FROM jobs WHERE id = ?`, id).Scan(&state, &leaseOwner)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlite store: job %d: %w", id, err)
	}
	return fmt.Errorf("job %d is %s (lease owner %q), not %q's: %w", id, state, leaseOwner, owner, store.ErrLeaseLost)
}

// Heartbeat extends owner's lease to now+lease.
func (s *Store) Heartbeat(ctx context.Context, id int64, owner string, lease time.Duration, now time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE jobs SET lease_until = ?, version = version + 1, updated_at = ?
		WHERE id = ? AND state = 'running' AND lease_owner = ?`,
		encTime(now.Add(lease)), encTime(now), id, owner)
	return s.checkTransition(ctx, res, err, "Heartbeat", id, owner)
}

// Checkpoint saves owner's progress on its running job.
func (s *Store) Checkpoint(ctx context.Context, id int64, owner string, checkpoint []byte, now time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE jobs SET checkpoint = ?, version = version + 1, updated_at = ?
		WHERE id = ? AND state = 'running' AND lease_owner = ?`,
		checkpoint, encTime(now), id, owner)
	return s.checkTransition(ctx, res, err, "Checkpoint", id, owner)
}

// Cancel fails a job nobody has claimed yet.
func (s *Store) Cancel(ctx context.Context, id int64, reason string, now time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE jobs SET state = 'failed', error = ?, version = version + 1, updated_at = ?
		WHERE id = ? AND state = 'pending'`, reason, encTime(now), id)
	if err != nil {
		return fmt.Errorf("sqlite store: Cancel job %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	j, err := s.Job(ctx, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("cancel job %d: it is %s: %w", id, j.State, store.ErrNotPending)
}

// Complete finishes owner's job with result.
func (s *Store) Complete(ctx context.Context, id int64, owner string, result []byte, now time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE jobs SET state = 'completed', result = ?, error = '', lease_until = NULL,
			version = version + 1, updated_at = ?
		WHERE id = ? AND state = 'running' AND lease_owner = ?`,
		result, encTime(now), id, owner)
	return s.checkTransition(ctx, res, err, "Complete", id, owner)
}

func (s *Store) checkTransition(ctx context.Context, res sql.Result, err error, op string, id int64, owner string) error {
	if err != nil {
		return fmt.Errorf("sqlite store: %s job %d: %w", op, id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite store: %s job %d: %w", op, id, err)
	}
	if n == 1 {
		return nil
	}
	return fmt.Errorf("%s: %w", op, s.leaseLost(ctx, s.w, id, owner))
}

// Fail records errMsg on owner's job: back to pending until retryAt when retryAt is set
// and attempts are left, failed for good otherwise. It reads the job and updates it in one
// transaction, the update guarded by the version it read.
func (s *Store) Fail(ctx context.Context, id int64, owner, errMsg string, retryAt, now time.Time) (err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite store: Fail job %d: %w", id, err)
	}
	defer rollback(tx, &err)
	var attempts, maxAttempts int
	var version int64
	err = tx.QueryRowContext(ctx, `SELECT attempts, max_attempts, version FROM jobs
		WHERE id = ? AND state = 'running' AND lease_owner = ?`, id, owner).Scan(&attempts, &maxAttempts, &version)
	if errors.Is(err, sql.ErrNoRows) {
		err = fmt.Errorf("Fail: %w", s.leaseLost(ctx, tx, id, owner))
		return err
	}
	if err != nil {
		return fmt.Errorf("sqlite store: Fail job %d: %w", id, err)
	}
	var res sql.Result
	if !retryAt.IsZero() && attempts < maxAttempts {
		res, err = tx.ExecContext(ctx, `UPDATE jobs SET state = 'pending', run_at = ?, error = ?,
				lease_owner = '', lease_until = NULL, version = version + 1, updated_at = ?
			WHERE id = ? AND state = 'running' AND lease_owner = ? AND version = ?`,
			encTime(retryAt), errMsg, encTime(now), id, owner, version)
	} else {
		res, err = tx.ExecContext(ctx, `UPDATE jobs SET state = 'failed', error = ?,
				lease_until = NULL, version = version + 1, updated_at = ?
			WHERE id = ? AND state = 'running' AND lease_owner = ? AND version = ?`,
			errMsg, encTime(now), id, owner, version)
	}
	if err != nil {
		return fmt.Errorf("sqlite store: Fail job %d: %w", id, err)
	}
	if n, rerr := res.RowsAffected(); rerr != nil || n != 1 {
		err = fmt.Errorf("Fail job %d: changed under the transaction (%v): %w", id, rerr, store.ErrLeaseLost)
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("sqlite store: Fail job %d: %w", id, err)
	}
	return nil
}

// Job returns one job; ErrNotFound when unknown.
func (s *Store) Job(ctx context.Context, id int64) (store.Job, error) {
	j, err := scanJob(s.r.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Job{}, fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("sqlite store: Job %d: %w", id, err)
	}
	return j, nil
}

// Jobs lists jobs, oldest first (newest first with f.Newest); Before and After bound their IDs.
func (s *Store) Jobs(ctx context.Context, f store.ListJobs) ([]store.Job, error) {
	var (
		where []string
		args  []any
	)
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, string(f.State))
	}
	if f.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, f.Kind)
	}
	if f.Batch != "" {
		where, args = append(where, "batch = ?"), append(args, f.Batch)
	}
	if f.After > 0 {
		where, args = append(where, "id > ?"), append(args, f.After)
	}
	if f.Before > 0 {
		where, args = append(where, "id < ?"), append(args, f.Before)
	}
	q := `SELECT ` + jobColumns + ` FROM jobs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	if f.Newest {
		q += ` ORDER BY id DESC LIMIT ?`
	} else {
		q += ` ORDER BY id LIMIT ?`
	}
	args = append(args, limit(f.Limit, 100))
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: Jobs: %w", err)
	}
	defer rows.Close()
	var out []store.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: Jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}
