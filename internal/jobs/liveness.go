package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Liveness keeps this node's heartbeat in the store and ends the calls of nodes that
// stopped heartbeating (killed, or their machine lost), which would otherwise stay live in
// the store for ever. Every node sweeps; the store ends each call once.
type Liveness struct {
	Store store.Store
	// Node names this process, as in leases and call records.
	Node string
	// LostAfter is how long a node may go without a heartbeat before it counts as lost
	// (default 30s). It heartbeats, and sweeps, every third of it.
	LostAfter time.Duration
	Clock     clock.Clock
	Logger    *slog.Logger
}

func (l *Liveness) lostAfter() time.Duration {
	if l.LostAfter <= 0 {
		return 30 * time.Second
	}
	return l.LostAfter
}

func (l *Liveness) now() time.Time {
	if l.Clock == nil {
		return time.Now()
	}
	return l.Clock.Now()
}

func (l *Liveness) log() *slog.Logger {
	if l.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Logger
}

// Start is for a node starting up, before it takes calls: it ends the calls its name still
// holds in the store (a previous process under the same name died holding them), then
// heartbeats and sweeps once. A failure is logged: the node runs, and Run tries again.
func (l *Liveness) Start(ctx context.Context) {
	now := l.now()
	ids, err := l.Store.EndNodeCalls(ctx, l.Node, now, now, store.OutcomeNodeLost)
	switch {
	case err != nil:
		l.log().Warn("the calls a previous process of this node left running were not ended", "err", err)
	case len(ids) > 0:
		l.log().Warn("ended the calls a previous process of this node held when it stopped", "outcome", store.OutcomeNodeLost, "calls", ids)
	}
	l.beat(ctx)
}

// Run heartbeats and sweeps every third of LostAfter until ctx ends.
func (l *Liveness) Run(ctx context.Context) {
	clk := l.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	t := clk.NewTimer(l.lostAfter() / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		l.beat(ctx)
		t.Reset(l.lostAfter() / 3)
	}
}

func (l *Liveness) beat(ctx context.Context) {
	if err := l.Store.NodeHeartbeat(ctx, l.Node, l.now()); err != nil && ctx.Err() == nil {
		l.log().Warn("node heartbeat not recorded: other nodes will count this node lost if it goes on", "err", err)
	}
	if _, err := l.Sweep(ctx); err != nil && ctx.Err() == nil {
		l.log().Warn("the calls of lost nodes were not swept", "err", err)
	}
}

// Sweep ends the running calls of every lost node and returns those this node ended.
func (l *Liveness) Sweep(ctx context.Context) ([]voice.CallID, error) {
	now := l.now()
	ids, err := l.Store.EndLostCalls(ctx, now.Add(-l.lostAfter()), now, store.OutcomeNodeLost)
	if len(ids) > 0 {
		l.log().Warn("ended the calls of a node that stopped heartbeating", "outcome", store.OutcomeNodeLost, "calls", ids)
	}
	return ids, err
}

// Lost reports whether node has stopped heartbeating: it did heartbeat, but not within
// LostAfter. A node that never heartbeated (an older version) is not judged, and neither
// is this node itself. n is what the store knows of it.
func (l *Liveness) Lost(ctx context.Context, node string) (lost bool, n store.Node, err error) {
	if node == "" || node == l.Node {
		return false, store.Node{}, nil
	}
	n, err = l.Store.Node(ctx, node)
	if errors.Is(err, store.ErrNotFound) {
		return false, store.Node{}, nil
	}
	if err != nil {
		return false, store.Node{}, err
	}
	return n.SeenAt.Before(l.now().Add(-l.lostAfter())), n, nil
}
