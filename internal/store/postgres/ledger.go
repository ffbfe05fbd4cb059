package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// refOf is the call name $2 stands for at carrier $1: the call it is an alias of, or itself.
const refOf = `coalesce((SELECT a.ref FROM carrier_aliases a WHERE a.carrier = $1 AND a.alias = $2), $2)`

// inNameTx runs fn in a transaction holding a lock on each of names at carrier, so that
// writes about a call by one of its names and an alias moving that name's entries take
// turns: none acts on a name another is moving. The locks are taken in order and freed at
// commit.
func (s *Store) inNameTx(ctx context.Context, carrier string, names []string, fn func(pgx.Tx) error) error {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, name := range names {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, carrier, name); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}

const progressColumns = `carrier, ref, call_id, status, status_rank, answered_by, verdict_rank, duration_ms, declined, progress_at`

// upsertProgress merges a word into a ledger entry by the ranks CarrierProgress documents;
// $2 is the call's name or an alias of it.
const upsertProgress = `INSERT INTO carrier_progress (` + progressColumns + `)
	VALUES ($1, ` + refOf + `, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (carrier, ref) DO UPDATE SET
	status = CASE WHEN excluded.status_rank > carrier_progress.status_rank
		THEN excluded.status ELSE carrier_progress.status END,
	status_rank = greatest(excluded.status_rank, carrier_progress.status_rank),
	answered_by = CASE WHEN excluded.verdict_rank > carrier_progress.verdict_rank
		THEN excluded.answered_by ELSE carrier_progress.answered_by END,
	verdict_rank = greatest(excluded.verdict_rank, carrier_progress.verdict_rank),
	duration_ms = CASE WHEN carrier_progress.duration_ms = 0
		THEN excluded.duration_ms ELSE carrier_progress.duration_ms END,
	call_id = CASE WHEN carrier_progress.call_id = ''
		THEN excluded.call_id ELSE carrier_progress.call_id END,
	declined = carrier_progress.declined OR excluded.declined,
	progress_at = greatest(excluded.progress_at, carrier_progress.progress_at)
	RETURNING ` + progressColumns

func mergeProgress(ctx context.Context, tx pgx.Tx, p store.CarrierProgress) (store.CarrierProgress, error) {
	return scanProgress(tx.QueryRow(ctx, upsertProgress, p.Carrier, p.Ref, string(p.CallID),
		p.Status, p.StatusRank, p.AnsweredBy, p.VerdictRank, p.Duration.Milliseconds(), p.Declined, ts(p.At)))
}

func scanProgress(row pgx.Row) (store.CarrierProgress, error) {
	var (
		p        store.CarrierProgress
		callID   string
		duration int64
	)
	if err := row.Scan(&p.Carrier, &p.Ref, &callID, &p.Status, &p.StatusRank, &p.AnsweredBy,
		&p.VerdictRank, &duration, &p.Declined, &p.At); err != nil {
		return p, err
	}
	p.CallID, p.Duration, p.At = voice.CallID(callID), time.Duration(duration)*time.Millisecond, p.At.UTC()
	return p, nil
}

// RecordCarrierProgress merges p into its call's ledger entry.
func (s *Store) RecordCarrierProgress(ctx context.Context, p store.CarrierProgress) (store.CarrierProgress, error) {
	if err := p.Check(); err != nil {
		return store.CarrierProgress{}, fmt.Errorf("postgres: %w", err)
	}
	var kept store.CarrierProgress
	err := s.inNameTx(ctx, p.Carrier, []string{p.Ref}, func(tx pgx.Tx) (err error) {
		kept, err = mergeProgress(ctx, tx, p)
		return err
	})
	if err != nil {
		return store.CarrierProgress{}, fmt.Errorf("postgres: record carrier progress %s/%s: %w", p.Carrier, p.Ref, err)
	}
	return kept, nil
}

// CarrierProgress reads a call's ledger entry by its name or an alias.
func (s *Store) CarrierProgress(ctx context.Context, carrier, ref string) (store.CarrierProgress, error) {
	p, err := scanProgress(s.pool.QueryRow(ctx, `SELECT `+progressColumns+` FROM carrier_progress
		WHERE carrier = $1 AND ref = `+refOf, carrier, ref))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.CarrierProgress{}, fmt.Errorf("carrier progress %s/%s: %w", carrier, ref, store.ErrNotFound)
	case err != nil:
		return store.CarrierProgress{}, fmt.Errorf("postgres: carrier progress %s/%s: %w", carrier, ref, err)
	}
	return p, nil
}

// CarrierOnce inserts (carrier, key) unless it is kept: the one insert that happens is the
// first.
func (s *Store) CarrierOnce(ctx context.Context, carrier, key string, at time.Time) (bool, error) {
	if carrier == "" || key == "" || at.IsZero() {
		return false, errors.New("postgres: carrier once: empty carrier, key or time")
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO carrier_once (carrier, name, seen_at) VALUES ($1, $2, $3)
		ON CONFLICT (carrier, name) DO NOTHING`, carrier, key, ts(at))
	if err != nil {
		return false, fmt.Errorf("postgres: carrier once %s: %w", carrier, err)
	}
	return tag.RowsAffected() == 1, nil
}

// AliasCarrierCall makes alias a second name of (carrier, ref), holding both names' locks.
func (s *Store) AliasCarrierCall(ctx context.Context, carrier, ref, alias string, at time.Time) error {
	if carrier == "" || ref == "" || alias == "" || at.IsZero() {
		return errors.New("postgres: alias carrier call: empty carrier, ref, alias or time")
	}
	err := s.inNameTx(ctx, carrier, []string{ref, alias}, func(tx pgx.Tx) error {
		return aliasCall(ctx, tx, carrier, ref, alias, at)
	})
	if err != nil && !errors.Is(err, store.ErrDuplicate) {
		return fmt.Errorf("postgres: alias carrier call %s/%s ← %s: %w", carrier, ref, alias, err)
	}
	return err
}

func aliasCall(ctx context.Context, tx pgx.Tx, carrier, ref, alias string, at time.Time) error {
	var first string
	if err := tx.QueryRow(ctx, `SELECT `+refOf, carrier, ref).Scan(&first); err != nil {
		return err
	}
	if alias == first {
		return nil
	}
	var to string
	switch err := tx.QueryRow(ctx, `SELECT ref FROM carrier_aliases WHERE carrier = $1 AND alias = $2`, carrier, alias).Scan(&to); {
	case err == nil && to == first:
		return nil
	case err == nil:
		return fmt.Errorf("carrier call %s/%s: %s already names %s: %w", carrier, ref, alias, to, store.ErrDuplicate)
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	var answers int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM carrier_calls WHERE carrier = $1 AND ref IN ($2, $3)`,
		carrier, first, alias).Scan(&answers); err != nil {
		return err
	}
	if answers == 2 {
		return fmt.Errorf("carrier call %s/%s: %s has its own answer: %w", carrier, ref, alias, store.ErrDuplicate)
	}
	if _, err := tx.Exec(ctx, `UPDATE carrier_calls SET ref = $3 WHERE carrier = $1 AND ref = $2`, carrier, alias, first); err != nil {
		return err
	}
	p, err := scanProgress(tx.QueryRow(ctx, `DELETE FROM carrier_progress WHERE carrier = $1 AND ref = $2
		RETURNING `+progressColumns, carrier, alias))
	switch {
	case err == nil:
		p.Ref = first
		if _, err := mergeProgress(ctx, tx, p); err != nil {
			return err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE carrier_aliases SET ref = $3 WHERE carrier = $1 AND ref = $2`, carrier, alias, first); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO carrier_aliases (carrier, alias, ref, created_at) VALUES ($1, $2, $3, $4)`,
		carrier, alias, first, ts(at))
	return err
}
