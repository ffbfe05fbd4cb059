package postgres

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/store/postgres/pgtest"
)

// The tests run against a real PostgreSQL (pgtest: HANDSET_TEST_DATABASE_URL names it);
// each gets a database of its own, handset_test_<random>, dropped when it ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newDatabase(t testing.TB) string { return pgtest.NewDatabase(t, "handset_test") }

// openStore opens a Store on a fresh database, closed when t ends.
func openStore(t testing.TB) (*Store, string) {
	t.Helper()
	dbURL := newDatabase(t)
	s, err := Open(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dbURL
}
