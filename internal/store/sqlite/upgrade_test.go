package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/handset-voice/handset/internal/store"
)

// TestUpgradeToCallListing opens a database written before migration 0006: its calls get
// empty summaries and its transcript lines become searchable.
func TestUpgradeToCallListing(t *testing.T) {
	ctx := context.Background()
	path, db := migratedBelow(t, 6)
	if _, err := db.ExecContext(ctx, `INSERT INTO calls (id, carrier, started_at, ended_at, outcome)
		VALUES ('old', 'twilio', '2031-01-02T03:04:05.000000Z', '2031-01-02T03:05:05.000000Z', 'caller_hangup');
		INSERT INTO transcript_lines (call_id, turn, role, text, at)
		VALUES ('old', 1, 'user', 'Où est ma commande ?', '2031-01-02T03:04:06.000000Z')`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open upgrades: %v", err)
	}
	defer s.Close()
	c, err := s.Call(ctx, "old")
	if err != nil || c.Summary != (store.CallSummary{}) || c.Outcome != "caller_hangup" {
		t.Fatalf("Call(old) = %+v, %v; want the call with an empty summary", c, err)
	}
	for _, text := range []string{"ou est", "COMMANDE"} {
		got, err := s.Calls(ctx, store.ListCalls{Text: text})
		if err != nil || len(got) != 1 || got[0].ID != "old" {
			t.Errorf("Calls(Text %q) = %v, %v; want the line written before the upgrade", text, got, err)
		}
	}
}

// TestUpgradeToCarrierLedger opens a database written before migration 0007: the webhook
// answers it kept are still found, and the ledger starts empty.
func TestUpgradeToCarrierLedger(t *testing.T) {
	ctx := context.Background()
	path, db := migratedBelow(t, 7)
	if _, err := db.ExecContext(ctx, `INSERT INTO carrier_calls (carrier, ref, request_key, answer, created_at)
		VALUES ('twilio', 'CA1', 'idem', ?, '2031-01-02T03:04:05.000000Z')`, []byte("answer")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open upgrades: %v", err)
	}
	defer s.Close()
	kept, first, err := s.RememberCarrierCall(ctx, store.CarrierCall{Carrier: "twilio", Ref: "CA1", Answer: []byte("new"), CreatedAt: time.Now()})
	if err != nil || first || string(kept.Answer) != "answer" {
		t.Errorf("RememberCarrierCall after the upgrade = %q, first %v, %v; want the answer kept before", kept.Answer, first, err)
	}
	if _, err := s.CarrierProgress(ctx, "twilio", "CA1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CarrierProgress of a call from before = %v, want ErrNotFound", err)
	}
	if err := s.AliasCarrierCall(ctx, "twilio", "CA1", "R1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.OpenCarrierStream(ctx, "twilio", "R1", time.Now()); err != nil {
		t.Errorf("OpenCarrierStream by a new alias of a call from before: %v", err)
	}
}

// migratedBelow is a database file migrated as a Handset before migration `version` left
// it, and the connection that did it (the caller closes it before opening the store).
func migratedBelow(t *testing.T, version int) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "handset.db")
	older := fstest.MapFS{}
	ms, err := migrations(migrationsFS())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version < version {
			older[m.name] = &fstest.MapFile{Data: []byte(m.sql)}
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate(context.Background(), db, fs.FS(older)); err != nil {
		t.Fatalf("migrate to %d: %v", version-1, err)
	}
	return path, db
}
