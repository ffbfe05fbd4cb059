package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/handset-voice/handset/internal/store"
)

// TestUpgradeToCallListing opens a database written before migration 0006: its calls get
// empty summaries and its transcript lines become searchable.
func TestUpgradeToCallListing(t *testing.T) {
	ctx := context.Background()
	dbURL, conn := migratedBelow(t, 6)
	if _, err := conn.Exec(ctx, `INSERT INTO calls (id, carrier, started_at, ended_at, outcome)
		VALUES ('old', 'twilio', '2031-01-02T03:04:05Z', '2031-01-02T03:05:05Z', 'caller_hangup')`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO transcript_lines (call_id, turn, role, text, at)
		VALUES ('old', 1, 'user', 'Où est ma commande ?', '2031-01-02T03:04:06Z')`); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, dbURL)
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
	dbURL, conn := migratedBelow(t, 7)
	if _, err := conn.Exec(ctx, `INSERT INTO carrier_calls (carrier, ref, request_key, answer, created_at)
		VALUES ('twilio', 'CA1', 'idem', 'answer', '2031-01-02T03:04:05Z')`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, dbURL)
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

// migratedBelow is a fresh database migrated as a Handset before migration `version` left
// it, and a connection to it, closed when t ends.
func migratedBelow(t *testing.T, version int) (string, *pgx.Conn) {
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
	t.Cleanup(func() { _ = conn.Close(ctx) })
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version >= version {
			break
		}
		if _, err := conn.Exec(ctx, m.sql); err != nil {
			t.Fatalf("migration %s: %v", m.name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			t.Fatal(err)
		}
	}
	return dbURL, conn
}
