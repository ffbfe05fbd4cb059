package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/handset-voice/handset/internal/store"
)

// RememberCarrierCall keeps c unless (carrier, ref), or the call ref is an alias of, has an
// entry. The no-op update makes RETURNING give the kept row under a conflict too (locked, so
// a concurrent prune cannot take it between insert and read); xmax is 0 only for a row this
// statement inserted.
func (s *Store) RememberCarrierCall(ctx context.Context, c store.CarrierCall) (store.CarrierCall, bool, error) {
	switch {
	case c.Carrier == "" || c.Ref == "":
		return store.CarrierCall{}, false, errors.New("postgres: remember carrier call: empty carrier or ref")
	case len(c.Answer) == 0:
		return store.CarrierCall{}, false, errors.New("postgres: remember carrier call: empty answer")
	case c.CreatedAt.IsZero():
		return store.CarrierCall{}, false, errors.New("postgres: remember carrier call: zero CreatedAt")
	}
	var (
		kept     store.CarrierCall
		streamed *time.Time
		first    bool
	)
	// Under the name's lock, an alias cannot move the call while it is answered.
	err := s.inNameTx(ctx, c.Carrier, []string{c.Ref}, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `INSERT INTO carrier_calls (carrier, ref, request_key, answer, created_at, streamed_at)
		VALUES ($1, `+refOf+`, $3, $4, $5, $6)
		ON CONFLICT (carrier, ref) DO UPDATE SET carrier = excluded.carrier
		RETURNING carrier, ref, request_key, answer, created_at, streamed_at, xmax = 0`,
			c.Carrier, c.Ref, c.RequestKey, c.Answer, ts(c.CreatedAt), ts(c.StreamedAt)).
			Scan(&kept.Carrier, &kept.Ref, &kept.RequestKey, &kept.Answer, &kept.CreatedAt, &streamed, &first)
	})
	if err != nil {
		return store.CarrierCall{}, false, fmt.Errorf("postgres: remember carrier call %s/%s: %w", c.Carrier, c.Ref, err)
	}
	kept.CreatedAt = kept.CreatedAt.UTC()
	kept.StreamedAt = fromTS(streamed)
	return kept, first, nil
}

// OpenCarrierStream sets streamed_at once, under the name's lock (as RememberCarrierCall).
func (s *Store) OpenCarrierStream(ctx context.Context, carrier, ref string, at time.Time) error {
	if at.IsZero() {
		return errors.New("postgres: open carrier stream: zero time")
	}
	err := s.inNameTx(ctx, carrier, []string{ref}, func(tx pgx.Tx) error {
		var opened bool
		err := tx.QueryRow(ctx, `SELECT streamed_at IS NOT NULL FROM carrier_calls
			WHERE carrier = $1 AND ref = `+refOf+` FOR UPDATE`, carrier, ref).Scan(&opened)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("carrier call %s/%s: %w", carrier, ref, store.ErrNotFound)
		case err != nil:
			return err
		case opened:
			return fmt.Errorf("carrier call %s/%s: stream already opened: %w", carrier, ref, store.ErrDuplicate)
		}
		_, err = tx.Exec(ctx, `UPDATE carrier_calls SET streamed_at = $3 WHERE carrier = $1 AND ref = `+refOf, carrier, ref, ts(at))
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrDuplicate) {
		return fmt.Errorf("postgres: open carrier stream %s/%s: %w", carrier, ref, err)
	}
	return err
}

// PruneCarrierCalls deletes the answers, aliases and names seen once from before before,
// and the ledger entries whose latest word is.
func (s *Store) PruneCarrierCalls(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for _, q := range []string{
		`DELETE FROM carrier_calls WHERE created_at < $1`,
		`DELETE FROM carrier_progress WHERE progress_at < $1`,
		`DELETE FROM carrier_aliases WHERE created_at < $1`,
		`DELETE FROM carrier_once WHERE seen_at < $1`,
	} {
		tag, err := s.pool.Exec(ctx, q, ts(before))
		if err != nil {
			return total, fmt.Errorf("postgres: prune carrier calls: %w", err)
		}
		total += tag.RowsAffected()
	}
	return total, nil
}
