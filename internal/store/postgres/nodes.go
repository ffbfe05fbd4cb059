package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// NodeHeartbeat registers node or moves its latest heartbeat forward (never back: a late
// write from a slow request must not make a node look older than it is).
func (s *Store) NodeHeartbeat(ctx context.Context, node string, now time.Time) error {
	if node == "" {
		return errors.New("postgres: node heartbeat: empty node")
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO nodes AS n (id, started_at, seen_at) VALUES ($1, $2, $2)
		ON CONFLICT (id) DO UPDATE SET seen_at = greatest(n.seen_at, excluded.seen_at)`, node, now.UTC())
	if err != nil {
		return fmt.Errorf("postgres: node heartbeat %s: %w", node, err)
	}
	return nil
}

// Node returns node's heartbeats; ErrNotFound when it never sent one.
func (s *Store) Node(ctx context.Context, node string) (store.Node, error) {
	var n store.Node
	err := s.pool.QueryRow(ctx, `SELECT id, started_at, seen_at FROM nodes WHERE id = $1`, node).
		Scan(&n.ID, &n.StartedAt, &n.SeenAt)
	if err != nil {
		return store.Node{}, notFound(err, "node", node)
	}
	n.StartedAt, n.SeenAt = n.StartedAt.UTC(), n.SeenAt.UTC()
	return n, nil
}

// EndLostCalls ends the running calls of nodes silent since silentSince. One UPDATE: a
// second sweeper blocks on the rows the first updates, then re-checks ended_at IS NULL
// and skips them, so each call is ended (and returned) once.
func (s *Store) EndLostCalls(ctx context.Context, silentSince, now time.Time, outcome string) ([]voice.CallID, error) {
	rows, err := s.pool.Query(ctx, `UPDATE calls SET ended_at = $2, outcome = $3
		WHERE ended_at IS NULL AND journal <> '' AND node IN (SELECT id FROM nodes WHERE seen_at < $1)
		RETURNING id`, silentSince.UTC(), now.UTC(), outcome)
	return endedIDs(rows, err, "end lost calls")
}

// EndNodeCalls ends node's calls that started before startedBefore and are still running.
func (s *Store) EndNodeCalls(ctx context.Context, node string, startedBefore, now time.Time, outcome string) ([]voice.CallID, error) {
	rows, err := s.pool.Query(ctx, `UPDATE calls SET ended_at = $3, outcome = $4
		WHERE ended_at IS NULL AND journal <> '' AND node = $1 AND started_at < $2
		RETURNING id`, node, startedBefore.UTC(), now.UTC(), outcome)
	return endedIDs(rows, err, "end calls of node "+node)
}

func endedIDs(rows pgx.Rows, err error, what string) ([]voice.CallID, error) {
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (voice.CallID, error) {
		var id string
		err := r.Scan(&id)
		return voice.CallID(id), err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return ids, nil
}
