package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/handset-voice/handset/internal/store"
)

// checkCarrierCall refuses an entry that could not be told apart from another.
func checkCarrierCall(c store.CarrierCall) error {
	switch {
	case c.Carrier == "" || c.Ref == "":
		return errors.New("sqlite store: RememberCarrierCall: empty carrier or ref")
	case len(c.Answer) == 0:
		return errors.New("sqlite store: RememberCarrierCall: empty answer")
	case c.CreatedAt.IsZero():
		return errors.New("sqlite store: RememberCarrierCall: zero CreatedAt")
	}
	return nil
}

// RememberCarrierCall keeps c unless (carrier, ref) has an entry, in one write transaction
// so the entry read back is the one kept.
func (s *Store) RememberCarrierCall(ctx context.Context, c store.CarrierCall) (_ store.CarrierCall, _ bool, err error) {
	if err := checkCarrierCall(c); err != nil {
		return store.CarrierCall{}, false, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return store.CarrierCall{}, false, fmt.Errorf("sqlite store: RememberCarrierCall: %w", err)
	}
	defer rollback(tx, &err)
	if c.Ref, err = resolveRef(ctx, tx, c.Carrier, c.Ref); err != nil {
		return store.CarrierCall{}, false, fmt.Errorf("sqlite store: RememberCarrierCall %s/%s: %w", c.Carrier, c.Ref, err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO carrier_calls (carrier, ref, request_key, answer, created_at, streamed_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (carrier, ref) DO NOTHING`,
		c.Carrier, c.Ref, c.RequestKey, c.Answer, encTime(c.CreatedAt), encTime(c.StreamedAt))
	if err != nil {
		return store.CarrierCall{}, false, fmt.Errorf("sqlite store: RememberCarrierCall %s/%s: %w", c.Carrier, c.Ref, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return store.CarrierCall{}, false, err
	}
	kept := c
	if n == 0 {
		if kept, err = scanCarrierCall(tx.QueryRowContext(ctx, `SELECT carrier, ref, request_key, answer, created_at, streamed_at
			FROM carrier_calls WHERE carrier = ? AND ref = ?`, c.Carrier, c.Ref)); err != nil {
			return store.CarrierCall{}, false, fmt.Errorf("sqlite store: RememberCarrierCall %s/%s: %w", c.Carrier, c.Ref, err)
		}
	}
	if err = tx.Commit(); err != nil {
		return store.CarrierCall{}, false, fmt.Errorf("sqlite store: RememberCarrierCall: %w", err)
	}
	return kept, n == 1, nil
}

func scanCarrierCall(row *sql.Row) (store.CarrierCall, error) {
	var (
		c                 store.CarrierCall
		created, streamed sql.NullString
	)
	if err := row.Scan(&c.Carrier, &c.Ref, &c.RequestKey, &c.Answer, &created, &streamed); err != nil {
		return c, err
	}
	var err error
	if c.CreatedAt, err = decTime(created); err != nil {
		return c, err
	}
	c.StreamedAt, err = decTime(streamed)
	return c, err
}

// OpenCarrierStream sets streamed_at once.
func (s *Store) OpenCarrierStream(ctx context.Context, carrier, ref string, at time.Time) error {
	if at.IsZero() {
		return errors.New("sqlite store: OpenCarrierStream: zero time")
	}
	res, err := s.w.ExecContext(ctx, `UPDATE carrier_calls SET streamed_at = ?
		WHERE carrier = ? AND ref = `+refOf+` AND streamed_at IS NULL`, encTime(at), carrier, carrier, ref, ref)
	if err != nil {
		return fmt.Errorf("sqlite store: OpenCarrierStream %s/%s: %w", carrier, ref, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var one int
	err = s.w.QueryRowContext(ctx, `SELECT 1 FROM carrier_calls WHERE carrier = ? AND ref = `+refOf, carrier, carrier, ref, ref).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("carrier call %s/%s: %w", carrier, ref, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("sqlite store: OpenCarrierStream %s/%s: %w", carrier, ref, err)
	}
	return fmt.Errorf("carrier call %s/%s: stream already opened: %w", carrier, ref, store.ErrDuplicate)
}

// PruneCarrierCalls deletes the answers, aliases and names seen once from before before,
// and the ledger entries whose latest word is.
func (s *Store) PruneCarrierCalls(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for _, q := range []string{
		`DELETE FROM carrier_calls WHERE created_at < ?`,
		`DELETE FROM carrier_progress WHERE progress_at < ?`,
		`DELETE FROM carrier_aliases WHERE created_at < ?`,
		`DELETE FROM carrier_once WHERE seen_at < ?`,
	} {
		res, err := s.w.ExecContext(ctx, q, encTime(before))
		if err != nil {
			return total, fmt.Errorf("sqlite store: PruneCarrierCalls: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
