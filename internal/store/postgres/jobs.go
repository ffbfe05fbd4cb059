package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/handset-voice/handset/internal/store"
)

const jobColumns = `id, kind, payload, state, attempts, max_attempts, run_at, lease_owner, lease_until, result, error, dedupe_key, batch, node, checkpoint, version, created_at, updated_at`

func scanJob(row pgx.Row) (store.Job, error) {
	var j store.Job
	var attempts, maxAttempts int32
	var leaseUntil *time.Time
	var dedupe *string
	err := row.Scan(&j.ID, &j.Kind, &j.Payload, &j.State, &attempts, &maxAttempts, &j.RunAt,
		&j.LeaseOwner, &leaseUntil, &j.Result, &j.Error, &dedupe, &j.Batch, &j.Node, &j.Checkpoint, &j.Version, &j.CreatedAt, &j.UpdatedAt)
	j.Attempts, j.MaxAttempts = int(attempts), int(maxAttempts)
	j.RunAt, j.LeaseUntil = j.RunAt.UTC(), fromTS(leaseUntil)
	j.CreatedAt, j.UpdatedAt = j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	if dedupe != nil {
		j.DedupeKey = *dedupe
	}
	return j, err
}

// Enqueue adds a pending job; ErrDuplicate when its dedupe key was used before.
func (s *Store) Enqueue(ctx context.Context, nj store.NewJob) (store.Job, error) {
	if nj.Kind == "" {
		return store.Job{}, errors.New("postgres: enqueue: empty kind")
	}
	maxAttempts := nj.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = 3
	}
	now := time.Now().UTC()
	// A zero RunAt stays zero: due at once, whatever clock the claimers use.
	runAt := nj.RunAt
	var dedupe any
	if nj.DedupeKey != "" {
		dedupe = nj.DedupeKey
	}
	j, err := scanJob(s.pool.QueryRow(ctx, `INSERT INTO jobs
		(kind, payload, state, max_attempts, run_at, dedupe_key, batch, node, created_at, updated_at)
		VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $8)
		RETURNING `+jobColumns, nj.Kind, nj.Payload, int32(maxAttempts), runAt.UTC(), dedupe, nj.Batch, nj.Node, now))
	if isUniqueViolation(err) {
		return store.Job{}, fmt.Errorf("postgres: enqueue %s (dedupe key %q): %w", nj.Kind, nj.DedupeKey, store.ErrDuplicate)
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("postgres: enqueue %s: %w", nj.Kind, err)
	}
	return j, nil
}

// Claim leases the next due job to owner: the pending job with the earliest RunAt that has
// come, else the running job (earliest RunAt) whose lease expired. The row is locked FOR UPDATE SKIP LOCKED in
// the same statement that takes it, so concurrent claimers (any number of pools or nodes)
// skip each other's rows instead of waiting or taking the same one.
func (s *Store) Claim(ctx context.Context, owner string, kinds []string, lease time.Duration, now time.Time) (store.Job, bool, error) {
	if owner == "" {
		return store.Job{}, false, errors.New("postgres: claim: empty owner")
	}
	if len(kinds) == 0 {
		kinds = nil // NULL: every kind
	}
	now = now.UTC()
	// A dead node's job on its last attempt: failed, not run a MaxAttempts+1st time.
	if _, err := s.pool.Exec(ctx, `UPDATE jobs SET state = 'failed', lease_until = NULL,
			error = 'lease expired on the last attempt (owner ' || lease_owner || ')',
			version = version + 1, updated_at = $1
		WHERE state = 'running' AND lease_until <= $1 AND attempts >= max_attempts
			AND ($2::text[] IS NULL OR kind = ANY($2)) AND node IN ('', $3)`, now, kinds, owner); err != nil {
		return store.Job{}, false, fmt.Errorf("postgres: claim: %w", err)
	}
	j, err := scanJob(s.pool.QueryRow(ctx, `WITH next AS (
			SELECT id FROM jobs
			WHERE ((state = 'pending' AND run_at <= $3) OR (state = 'running' AND lease_until <= $3))
				AND ($2::text[] IS NULL OR kind = ANY($2)) AND node IN ('', $1)
			ORDER BY state = 'running', run_at, id -- pending work first, then reclaims
			LIMIT 1
			FOR UPDATE SKIP LOCKED)
		UPDATE jobs SET state = 'running', lease_owner = $1, lease_until = $4,
			attempts = jobs.attempts + 1, version = jobs.version + 1, updated_at = $3
		FROM next WHERE jobs.id = next.id
		RETURNING `+prefixed("jobs.", jobColumns), owner, kinds, now, now.Add(lease)))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Job{}, false, nil
	}
	if err != nil {
		return store.Job{}, false, fmt.Errorf("postgres: claim: %w", err)
	}
	return j, true, nil
}

// transition runs a compare-and-set UPDATE on a running job leased to owner: set is the
// SET list, its parameters from $3 on ($1 is the id, $2 the owner). No row changed means
// the job is not owner's any more (ErrLeaseLost), or does not exist (ErrNotFound).
func (s *Store) transition(ctx context.Context, op string, id int64, owner, set string, args ...any) error {
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET `+set+`, version = version + 1
		WHERE id = $1 AND state = 'running' AND lease_owner = $2`, append([]any{id, owner}, args...)...)
	if err != nil {
		return fmt.Errorf("postgres: %s job %d: %w", op, id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE id = $1)`, id).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: %s job %d: %w", op, id, err)
	}
	if !exists {
		return fmt.Errorf("postgres: %s job %d: %w", op, id, store.ErrNotFound)
	}
	return fmt.Errorf("postgres: %s job %d as %s: %w", op, id, owner, store.ErrLeaseLost)
}

// Heartbeat extends owner's lease to now+lease.
func (s *Store) Heartbeat(ctx context.Context, id int64, owner string, lease time.Duration, now time.Time) error {
	now = now.UTC()
	return s.transition(ctx, "heartbeat", id, owner, `lease_until = $3, updated_at = $4`, now.Add(lease), now)
}

// Checkpoint saves owner's progress on its running job.
func (s *Store) Checkpoint(ctx context.Context, id int64, owner string, checkpoint []byte, now time.Time) error {
	return s.transition(ctx, "checkpoint", id, owner, `checkpoint = $3, updated_at = $4`, checkpoint, now.UTC())
}

// Cancel fails a job nobody has claimed yet.
func (s *Store) Cancel(ctx context.Context, id int64, reason string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET state = 'failed', error = $2, version = version + 1, updated_at = $3
		WHERE id = $1 AND state = 'pending'`, id, reason, now.UTC())
	if err != nil {
		return fmt.Errorf("postgres: cancel job %d: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	j, err := s.Job(ctx, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("postgres: cancel job %d: it is %s: %w", id, j.State, store.ErrNotPending)
}

// Complete finishes owner's job with result.
func (s *Store) Complete(ctx context.Context, id int64, owner string, result []byte, now time.Time) error {
	return s.transition(ctx, "complete", id, owner,
		`state = 'completed', result = $3, error = '', lease_until = NULL, updated_at = $4`, result, now.UTC())
}

// Fail records errMsg: back to pending until retryAt when one is given and attempts are
// left, failed for good otherwise.
func (s *Store) Fail(ctx context.Context, id int64, owner, errMsg string, retryAt, now time.Time) error {
	return s.transition(ctx, "fail", id, owner, `error = $3, updated_at = $4, lease_until = NULL,
		state = CASE WHEN $5::timestamptz IS NOT NULL AND attempts < max_attempts THEN 'pending' ELSE 'failed' END,
		run_at = CASE WHEN $5::timestamptz IS NOT NULL AND attempts < max_attempts THEN $5 ELSE run_at END,
		lease_owner = CASE WHEN $5::timestamptz IS NOT NULL AND attempts < max_attempts THEN '' ELSE lease_owner END`,
		errMsg, now.UTC(), ts(retryAt))
}

// Job returns one job; ErrNotFound when there is none with that id.
func (s *Store) Job(ctx context.Context, id int64) (store.Job, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
	if err != nil {
		return store.Job{}, notFound(err, "job", id)
	}
	return j, nil
}

// Jobs lists jobs, oldest first (newest first with f.Newest); Before and After bound their IDs.
func (s *Store) Jobs(ctx context.Context, f store.ListJobs) ([]store.Job, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	order := `id`
	if f.Newest {
		order = `id DESC`
	}
	rows, err := s.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE ($1 = '' OR state = $1) AND ($2 = '' OR kind = $2) AND ($3 = '' OR batch = $3) AND id > $4
			AND ($5::bigint <= 0 OR id < $5)
		ORDER BY `+order+` LIMIT $6`, string(f.State), f.Kind, f.Batch, f.After, f.Before, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: list jobs: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Job, error) { return scanJob(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list jobs: %w", err)
	}
	return jobs, nil
}

// prefixed qualifies each column of a comma-separated list with p ("jobs.").
func prefixed(p, columns string) string {
	out := make([]byte, 0, len(columns)*2)
	out = append(out, p...)
	for i := 0; i < len(columns); i++ {
		out = append(out, columns[i])
		if columns[i] == ',' {
			for i+1 < len(columns) && columns[i+1] == ' ' {
				i++
				out = append(out, ' ')
			}
			out = append(out, p...)
		}
	}
	return string(out)
}
