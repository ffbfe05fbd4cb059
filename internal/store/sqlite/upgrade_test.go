package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/handset-voice/handset/internal/store"
)

// TestUpgradeToCallListing opens a database written before migration 0006: its calls get
// empty summaries and its transcript lines become searchable.
func TestUpgradeToCallListing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "handset.db")
	older := fstest.MapFS{}
	ms, err := migrations(migrationsFS())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version < 6 {
			older[m.name] = &fstest.MapFile{Data: []byte(m.sql)}
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate(ctx, db, fs.FS(older)); err != nil {
		t.Fatalf("migrate to 5: %v", err)
	}
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
