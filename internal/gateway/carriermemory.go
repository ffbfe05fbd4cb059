package gateway

import (
	"context"
	"errors"
	"fmt"
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

// memoriesOf gives each carrier, by name, its memory in st: its webhooks and its control
// share it, and no carrier's keys meet another's.
func memoriesOf(st store.Store) func(name string) carrier.Memory {
	return func(name string) carrier.Memory { return carrierMemory{st: st, carrier: name} }
}

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

func (m carrierMemory) Progressed(ctx context.Context, p carrier.Progress, at time.Time) error {
	if err := checkName("call ref", p.Ref); err != nil {
		return err
	}
	_, err := m.st.RecordCarrierProgress(ctx, store.CarrierProgress{
		Carrier: m.carrier, Ref: p.Ref, CallID: p.CallID,
		Status: string(p.Status), StatusRank: p.Status.Rank(),
		AnsweredBy: string(p.AnsweredBy), VerdictRank: p.AnsweredBy.Rank(),
		Duration: p.Duration, Declined: p.Declined, At: at,
	})
	return err
}

func (m carrierMemory) Progress(ctx context.Context, ref string) (carrier.Progress, bool, error) {
	if err := checkName("call ref", ref); err != nil {
		return carrier.Progress{}, false, err
	}
	e, err := m.st.CarrierProgress(ctx, m.carrier, ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return carrier.Progress{}, false, nil
	case err != nil:
		return carrier.Progress{}, false, err
	}
	return carrier.Progress{
		CallID: e.CallID, Ref: e.Ref, Status: carrier.Status(e.Status),
		AnsweredBy: carrier.AnsweredBy(e.AnsweredBy), Duration: e.Duration, Declined: e.Declined,
	}, true, nil
}

func (m carrierMemory) Once(ctx context.Context, key string, at time.Time) (bool, error) {
	if err := checkName("key", key); err != nil {
		return false, err
	}
	return m.st.CarrierOnce(ctx, m.carrier, key, at)
}

func (m carrierMemory) Alias(ctx context.Context, ref, other string) error {
	if err := checkName("call ref", ref); err != nil {
		return err
	}
	if err := checkName("alias", other); err != nil {
		return err
	}
	err := m.st.AliasCarrierCall(ctx, m.carrier, ref, other, time.Now())
	if errors.Is(err, store.ErrDuplicate) {
		return fmt.Errorf("%w: %v", carrier.ErrAliasTaken, err)
	}
	return err
}

// maxMemoryName bounds the names a carrier's requests make the memory keep: vendors' ids
// are well under it, and a forged request cannot fill the store with huge keys.
const maxMemoryName = 256

func checkName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("carrier memory: empty %s", what)
	case len(name) > maxMemoryName:
		return fmt.Errorf("carrier memory: %s of %d bytes, over %d", what, len(name), maxMemoryName)
	}
	return nil
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
