package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/store"
)

// carrierCallRetention is how long the store remembers a carrier call's webhook answer. A
// webhook replayed after that is answered afresh, so it must outlast any call and any
// carrier retry by far; a day keeps the table small.
const carrierCallRetention = 24 * time.Hour

// carrierPruneEvery is how often a node forgets the answers older than the retention.
const carrierPruneEvery = time.Hour

// carrierMemory is a carrier's call memory, kept in the store so every node shares it.
type carrierMemory struct {
	st      store.Store
	carrier string
}

var _ carrier.Memory = carrierMemory{}

func (m carrierMemory) Remember(ctx context.Context, a carrier.Answer) (carrier.Answer, bool, error) {
	kept, first, err := m.st.RememberCarrierCall(ctx, store.CarrierCall{
		Carrier: m.carrier, Ref: a.Ref, RequestKey: a.RequestKey, Answer: a.Body, CreatedAt: a.At,
	})
	if err != nil {
		return carrier.Answer{}, false, err
	}
	return carrier.Answer{
		Ref: kept.Ref, RequestKey: kept.RequestKey, Body: kept.Answer, At: kept.CreatedAt,
		Streamed: !kept.StreamedAt.IsZero(),
	}, first, nil
}

func (m carrierMemory) Streamed(ctx context.Context, ref string, at time.Time) error {
	err := m.st.OpenCarrierStream(ctx, m.carrier, ref, at)
	switch {
	case errors.Is(err, store.ErrDuplicate):
		return carrier.ErrStreamOpened
	case errors.Is(err, store.ErrNotFound):
		return carrier.ErrCallUnknown
	}
	return err
}

// pruneCarrierCalls forgets old webhook answers now and every carrierPruneEvery until ctx
// ends. Every node prunes; deleting what another node deleted is harmless.
func (s *server) pruneCarrierCalls(ctx context.Context) {
	t := time.NewTicker(carrierPruneEvery)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, storeTimeout)
		n, err := s.st.PruneCarrierCalls(pctx, time.Now().Add(-carrierCallRetention))
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("could not prune old carrier webhook answers", "err", err)
		case n > 0:
			s.log.Debug("pruned old carrier webhook answers", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
