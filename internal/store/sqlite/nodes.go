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

// NodeHeartbeat registers node or moves its latest heartbeat forward (never back).
func (s *Store) NodeHeartbeat(ctx context.Context, node string, now time.Time) error {
	if node == "" {
		return errors.New("sqlite store: NodeHeartbeat: empty node")
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO nodes (id, started_at, seen_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET seen_at = max(seen_at, excluded.seen_at)`, node, encTime(now), encTime(now))
	if err != nil {
		return fmt.Errorf("sqlite store: NodeHeartbeat %s: %w", node, err)
	}
	return nil
}

// Node returns node's heartbeats; ErrNotFound when it never sent one.
func (s *Store) Node(ctx context.Context, node string) (store.Node, error) {
	var started, seen sql.NullString
	n := store.Node{ID: node}
	err := s.r.QueryRowContext(ctx, `SELECT started_at, seen_at FROM nodes WHERE id = ?`, node).Scan(&started, &seen)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Node{}, fmt.Errorf("node %s: %w", node, store.ErrNotFound)
	}
	if err != nil {
		return store.Node{}, fmt.Errorf("sqlite store: Node %s: %w", node, err)
	}
	if n.StartedAt, err = decTime(started); err != nil {
		return store.Node{}, err
	}
	if n.SeenAt, err = decTime(seen); err != nil {
		return store.Node{}, err
	}
	return n, nil
}

// EndLostCalls ends the running calls of nodes silent since silentSince. SQLite has one
// writer at a time, and the update re-checks ended_at IS NULL, so each call is ended (and
// returned) once.
func (s *Store) EndLostCalls(ctx context.Context, silentSince, now time.Time, outcome string) ([]voice.CallID, error) {
	return s.endCalls(ctx, "EndLostCalls", `UPDATE calls SET ended_at = ?, outcome = ?
		WHERE ended_at IS NULL AND journal <> '' AND node IN (SELECT id FROM nodes WHERE seen_at < ?)
		RETURNING id`, encTime(now), outcome, encTime(silentSince))
}

// EndNodeCalls ends node's calls that started before startedBefore and are still running.
func (s *Store) EndNodeCalls(ctx context.Context, node string, startedBefore, now time.Time, outcome string) ([]voice.CallID, error) {
	return s.endCalls(ctx, "EndNodeCalls", `UPDATE calls SET ended_at = ?, outcome = ?
		WHERE ended_at IS NULL AND journal <> '' AND node = ? AND started_at < ?
		RETURNING id`, encTime(now), outcome, node, encTime(startedBefore))
}

func (s *Store) endCalls(ctx context.Context, op, query string, args ...any) ([]voice.CallID, error) {
	rows, err := s.w.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: %s: %w", op, err)
	}
	defer rows.Close()
	var ids []voice.CallID
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlite store: %s: %w", op, err)
		}
		ids = append(ids, voice.CallID(id))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: %s: %w", op, err)
	}
	return ids, nil
}
