package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/handset-voice/handset/internal/store/storetest"
)

// TestUpgradeToCallListing opens a database written before migration 0006: its calls get
// empty summaries and its transcript lines become searchable.
func TestUpgradeToCallListing(t *testing.T) {
	s := upgraded(t, 6, `INSERT INTO calls (id, carrier, started_at, ended_at, outcome)
		VALUES ('old', 'twilio', '2031-01-02T03:04:05Z', '2031-01-02T03:05:05Z', 'caller_hangup')`,
		`INSERT INTO transcript_lines (call_id, turn, role, text, at)
		VALUES ('old', 1, 'user', 'Où est ma commande ?', '2031-01-02T03:04:06Z')`)
	storetest.CheckUpgradedCallListing(t, s)
}

// TestUpgradeToCarrierLedger opens a database written before migration 0007: the webhook
// answers it kept are still found, and the ledger starts empty.
func TestUpgradeToCarrierLedger(t *testing.T) {
	s := upgraded(t, 7, `INSERT INTO carrier_calls (carrier, ref, request_key, answer, created_at)
		VALUES ('twilio', 'CA1', 'idem', 'answer', '2031-01-02T03:04:05Z')`)
	storetest.CheckUpgradedCarrierCall(t, s)
}

// upgraded is a Store opened on a fresh database that a Handset before migration `below`
// migrated, holding what the statements before put in it; closed when t ends.
func upgraded(t *testing.T, below int, before ...string) *Store {
	t.Helper()
	ctx := context.Background()
	dbURL := newDatabase(t)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version >= below {
			break
		}
		if _, err := conn.Exec(ctx, m.sql); err != nil {
			t.Fatalf("migration %s: %v", m.name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range before {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("Open upgrades: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
