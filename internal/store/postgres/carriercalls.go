package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/handset-voice/handset/internal/store"
)

// RememberCarrierCall keeps c unless (carrier, ref) has an entry. The no-op update makes
// RETURNING give the kept row under a conflict too (locked, so a concurrent prune cannot
// take it between insert and read); xmax is 0 only for a row this statement inserted.
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
	err := s.pool.QueryRow(ctx, `INSERT INTO carrier_calls (carrier, ref, request_key, answer, created_at, streamed_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (carrier, ref) DO UPDATE SET carrier = excluded.carrier
		RETURNING carrier, ref, request_key, answer, created_at, streamed_at, xmax = 0`,
		c.Carrier, c.Ref, c.RequestKey, c.Answer, ts(c.CreatedAt), ts(c.StreamedAt)).
		Scan(&kept.Carrier, &kept.Ref, &kept.RequestKey, &kept.Answer, &kept.CreatedAt, &streamed, &first)
	if err != nil {
		return store.CarrierCall{}, false, fmt.Errorf("postgres: remember carrier call %s/%s: %w", c.Carrier, c.Ref, err)
	}
	kept.CreatedAt = kept.CreatedAt.UTC()
	kept.StreamedAt = fromTS(streamed)
	return kept, first, nil
}

// OpenCarrierStream sets streamed_at once.
func (s *Store) OpenCarrierStream(ctx context.Context, carrier, ref string, at time.Time) error {
	if at.IsZero() {
		return errors.New("postgres: open carrier stream: zero time")
	}
	tag, err := s.pool.Exec(ctx, `UPDATE carrier_calls SET streamed_at = $1
		WHERE carrier = $2 AND ref = $3 AND streamed_at IS NULL`, ts(at), carrier, ref)
	if err != nil {
		return fmt.Errorf("postgres: open carrier stream %s/%s: %w", carrier, ref, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var one int
	err = s.pool.QueryRow(ctx, `SELECT 1 FROM carrier_calls WHERE carrier = $1 AND ref = $2`, carrier, ref).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("carrier call %s/%s: %w", carrier, ref, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("postgres: open carrier stream %s/%s: %w", carrier, ref, err)
	}
	return fmt.Errorf("carrier call %s/%s: stream already opened: %w", carrier, ref, store.ErrDuplicate)
}

// PruneCarrierCalls deletes the entries created before before.
func (s *Store) PruneCarrierCalls(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM carrier_calls WHERE created_at < $1`, ts(before))
	if err != nil {
		return 0, fmt.Errorf("postgres: prune carrier calls: %w", err)
	}
	return tag.RowsAffected(), nil
}
