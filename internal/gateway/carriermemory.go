package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/handset-voice/handset/internal/carrier/twilio"
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

var _ twilio.Memory = carrierMemory{}

func (m carrierMemory) Remember(ctx context.Context, a twilio.Answer) (twilio.Answer, bool, error) {
	kept, first, err := m.st.RememberCarrierCall(ctx, store.CarrierCall{
		Carrier: m.carrier, Ref: a.CallSid, RequestKey: a.IdempotencyToken, Answer: a.TwiML, CreatedAt: a.At,
	})
	if err != nil {
		return twilio.Answer{}, false, err
	}
	return twilio.Answer{
		CallSid: kept.Ref, IdempotencyToken: kept.RequestKey, TwiML: kept.Answer, At: kept.CreatedAt,
		Streamed: !kept.StreamedAt.IsZero(),
	}, first, nil
}

func (m carrierMemory) Streamed(ctx context.Context, callSid string, at time.Time) error {
	err := m.st.OpenCarrierStream(ctx, m.carrier, callSid, at)
	switch {
	case errors.Is(err, store.ErrDuplicate):
		return twilio.ErrStreamOpened
	case errors.Is(err, store.ErrNotFound):
		return twilio.ErrCallUnknown
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
