package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/handset-voice/handset/internal/store/storetest"
)

// TestUpgradeToCallListing opens a database written before migration 0006: its calls get
// empty summaries and its transcript lines become searchable.
func TestUpgradeToCallListing(t *testing.T) {
	s := upgraded(t, 6, `INSERT INTO calls (id, carrier, started_at, ended_at, outcome)
		VALUES ('old', 'twilio', '2031-01-02T03:04:05.000000Z', '2031-01-02T03:05:05.000000Z', 'caller_hangup');
		INSERT INTO transcript_lines (call_id, turn, role, text, at)
		VALUES ('old', 1, 'user', 'Où est ma commande ?', '2031-01-02T03:04:06.000000Z')`)
	storetest.CheckUpgradedCallListing(t, s)
}

// TestUpgradeToCarrierLedger opens a database written before migration 0007: the webhook
// answers it kept are still found, and the ledger starts empty.
func TestUpgradeToCarrierLedger(t *testing.T) {
	s := upgraded(t, 7, `INSERT INTO carrier_calls (carrier, ref, request_key, answer, created_at)
		VALUES ('twilio', 'CA1', 'idem', ?, '2031-01-02T03:04:05.000000Z')`, []byte("answer"))
	storetest.CheckUpgradedCarrierCall(t, s)
}

// upgraded is a Store opened on a database file that a Handset before migration `below`
// wrote, holding what before (with args) put in it; closed when t ends.
func upgraded(t *testing.T, below int, before string, args ...any) *Store {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "handset.db")
	older := fstest.MapFS{}
	ms, err := migrations(migrationsFS())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version < below {
			older[m.name] = &fstest.MapFile{Data: []byte(m.sql)}
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate(ctx, db, fs.FS(older)); err != nil {
		t.Fatalf("migrate to %d: %v", below-1, err)
	}
	if _, err := db.ExecContext(ctx, before, args...); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open upgrades: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
