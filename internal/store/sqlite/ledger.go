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

// refOf is the call a name stands for at a carrier (parameters: carrier, name, name): the
// call it is an alias of, or itself.
const refOf = `coalesce((SELECT a.ref FROM carrier_aliases a WHERE a.carrier = ? AND a.alias = ?), ?)`

type queryRower interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// resolveRef is the call name stands for at carrier.
func resolveRef(ctx context.Context, q queryRower, carrier, name string) (string, error) {
	var ref string
	err := q.QueryRowContext(ctx, `SELECT `+refOf, carrier, name, name).Scan(&ref)
	return ref, err
}

const progressColumns = `carrier, ref, call_id, status, status_rank, answered_by, verdict_rank, duration_ms, declined, progress_at`

// upsertProgress merges a word into a ledger entry by the ranks CarrierProgress documents.
const upsertProgress = `INSERT INTO carrier_progress (` + progressColumns + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (carrier, ref) DO UPDATE SET
	status = CASE WHEN excluded.status_rank > carrier_progress.status_rank
		THEN excluded.status ELSE carrier_progress.status END,
	status_rank = max(excluded.status_rank, carrier_progress.status_rank),
	answered_by = CASE WHEN excluded.verdict_rank > carrier_progress.verdict_rank
		THEN excluded.answered_by ELSE carrier_progress.answered_by END,
	verdict_rank = max(excluded.verdict_rank, carrier_progress.verdict_rank),
	duration_ms = CASE WHEN carrier_progress.duration_ms = 0
		THEN excluded.duration_ms ELSE carrier_progress.duration_ms END,
	call_id = CASE WHEN carrier_progress.call_id = ''
		THEN excluded.call_id ELSE carrier_progress.call_id END,
	declined = max(excluded.declined, carrier_progress.declined),
	progress_at = max(excluded.progress_at, carrier_progress.progress_at)
	RETURNING ` + progressColumns

func mergeProgress(ctx context.Context, tx *sql.Tx, p store.CarrierProgress) (store.CarrierProgress, error) {
	return scanProgress(tx.QueryRowContext(ctx, upsertProgress, p.Carrier, p.Ref, string(p.CallID),
		p.Status, p.StatusRank, p.AnsweredBy, p.VerdictRank, p.Duration.Milliseconds(), p.Declined, encTime(p.At)))
}

func scanProgress(row *sql.Row) (store.CarrierProgress, error) {
	var (
		p        store.CarrierProgress
		callID   string
		duration int64
		at       sql.NullString
	)
	if err := row.Scan(&p.Carrier, &p.Ref, &callID, &p.Status, &p.StatusRank, &p.AnsweredBy,
		&p.VerdictRank, &duration, &p.Declined, &at); err != nil {
		return p, err
	}
	p.CallID, p.Duration = voice.CallID(callID), time.Duration(duration)*time.Millisecond
	var err error
	p.At, err = decTime(at)
	return p, err
}

// RecordCarrierProgress merges p into its call's ledger entry in one write transaction, so
// the alias read and the merge see the same ledger.
func (s *Store) RecordCarrierProgress(ctx context.Context, p store.CarrierProgress) (_ store.CarrierProgress, err error) {
	if err := p.Check(); err != nil {
		return store.CarrierProgress{}, fmt.Errorf("sqlite store: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return store.CarrierProgress{}, fmt.Errorf("sqlite store: RecordCarrierProgress: %w", err)
	}
	defer rollback(tx, &err)
	if p.Ref, err = resolveRef(ctx, tx, p.Carrier, p.Ref); err != nil {
		return store.CarrierProgress{}, fmt.Errorf("sqlite store: RecordCarrierProgress %s/%s: %w", p.Carrier, p.Ref, err)
	}
	kept, err := mergeProgress(ctx, tx, p)
	if err != nil {
		return store.CarrierProgress{}, fmt.Errorf("sqlite store: RecordCarrierProgress %s/%s: %w", p.Carrier, p.Ref, err)
	}
	if err = tx.Commit(); err != nil {
		return store.CarrierProgress{}, fmt.Errorf("sqlite store: RecordCarrierProgress: %w", err)
	}
	return kept, nil
}

// CarrierProgress reads a call's ledger entry by its name or an alias.
func (s *Store) CarrierProgress(ctx context.Context, carrier, ref string) (store.CarrierProgress, error) {
	p, err := scanProgress(s.r.QueryRowContext(ctx, `SELECT `+progressColumns+` FROM carrier_progress
		WHERE carrier = ? AND ref = `+refOf, carrier, carrier, ref, ref))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.CarrierProgress{}, fmt.Errorf("carrier progress %s/%s: %w", carrier, ref, store.ErrNotFound)
	case err != nil:
		return store.CarrierProgress{}, fmt.Errorf("sqlite store: CarrierProgress %s/%s: %w", carrier, ref, err)
	}
	return p, nil
}

// CarrierOnce inserts (carrier, key) unless it is kept: the one insert that happens is the
// first.
func (s *Store) CarrierOnce(ctx context.Context, carrier, key string, at time.Time) (bool, error) {
	if carrier == "" || key == "" || at.IsZero() {
		return false, errors.New("sqlite store: CarrierOnce: empty carrier, key or time")
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO carrier_once (carrier, name, seen_at) VALUES (?, ?, ?)
		ON CONFLICT (carrier, name) DO NOTHING`, carrier, key, encTime(at))
	if err != nil {
		return false, fmt.Errorf("sqlite store: CarrierOnce %s: %w", carrier, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// AliasCarrierCall makes alias a second name of (carrier, ref) in one write transaction.
func (s *Store) AliasCarrierCall(ctx context.Context, carrier, ref, alias string, at time.Time) (err error) {
	if carrier == "" || ref == "" || alias == "" || at.IsZero() {
		return errors.New("sqlite store: AliasCarrierCall: empty carrier, ref, alias or time")
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite store: AliasCarrierCall: %w", err)
	}
	defer rollback(tx, &err)
	if err = aliasCall(ctx, tx, carrier, ref, alias, at); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("sqlite store: AliasCarrierCall: %w", err)
	}
	return nil
}

func aliasCall(ctx context.Context, tx *sql.Tx, carrier, ref, alias string, at time.Time) error {
	wrap := func(err error) error {
		return fmt.Errorf("sqlite store: AliasCarrierCall %s/%s ← %s: %w", carrier, ref, alias, err)
	}
	first, err := resolveRef(ctx, tx, carrier, ref)
	if err != nil {
		return wrap(err)
	}
	if alias == first {
		return nil
	}
	var to string
	switch err := tx.QueryRowContext(ctx, `SELECT ref FROM carrier_aliases WHERE carrier = ? AND alias = ?`, carrier, alias).Scan(&to); {
	case err == nil && to == first:
		return nil
	case err == nil:
		return fmt.Errorf("carrier call %s/%s: %s already names %s: %w", carrier, ref, alias, to, store.ErrDuplicate)
	case !errors.Is(err, sql.ErrNoRows):
		return wrap(err)
	}
	var answers int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM carrier_calls WHERE carrier = ? AND ref IN (?, ?)`,
		carrier, first, alias).Scan(&answers); err != nil {
		return wrap(err)
	}
	if answers == 2 {
		return fmt.Errorf("carrier call %s/%s: %s has its own answer: %w", carrier, ref, alias, store.ErrDuplicate)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE carrier_calls SET ref = ? WHERE carrier = ? AND ref = ?`, first, carrier, alias); err != nil {
		return wrap(err)
	}
	p, err := scanProgress(tx.QueryRowContext(ctx, `SELECT `+progressColumns+` FROM carrier_progress
		WHERE carrier = ? AND ref = ?`, carrier, alias))
	switch {
	case err == nil:
		p.Ref = first
		if _, err := mergeProgress(ctx, tx, p); err != nil {
			return wrap(err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM carrier_progress WHERE carrier = ? AND ref = ?`, carrier, alias); err != nil {
			return wrap(err)
		}
	case !errors.Is(err, sql.ErrNoRows):
		return wrap(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE carrier_aliases SET ref = ? WHERE carrier = ? AND ref = ?`, first, carrier, alias); err != nil {
		return wrap(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO carrier_aliases (carrier, alias, ref, created_at) VALUES (?, ?, ?, ?)`,
		carrier, alias, first, encTime(at)); err != nil {
		return wrap(err)
	}
	return nil
}
