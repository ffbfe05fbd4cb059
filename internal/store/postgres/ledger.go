package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/handset-voice/handset/internal/store"
)

var errLedgerTODO = errors.New("postgres store: the carrier call ledger is not built yet")

// RecordCarrierProgress merges p into its call's ledger entry.
func (s *Store) RecordCarrierProgress(ctx context.Context, p store.CarrierProgress) (store.CarrierProgress, error) {
	return store.CarrierProgress{}, errLedgerTODO
}

// CarrierProgress reads a call's ledger entry by its name or an alias.
func (s *Store) CarrierProgress(ctx context.Context, carrier, ref string) (store.CarrierProgress, error) {
	return store.CarrierProgress{}, errLedgerTODO
}

// CarrierOnce reports whether (carrier, key) is new.
func (s *Store) CarrierOnce(ctx context.Context, carrier, key string, at time.Time) (bool, error) {
	return false, errLedgerTODO
}

// AliasCarrierCall makes alias a second name of (carrier, ref).
func (s *Store) AliasCarrierCall(ctx context.Context, carrier, ref, alias string, at time.Time) error {
	return errLedgerTODO
}
