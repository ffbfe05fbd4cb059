package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestMigrateConcurrentOpen is several nodes starting at once on an empty database: the
// advisory lock makes them migrate once, and all of them open.
func TestMigrateConcurrentOpen(t *testing.T) {
	dbURL := newDatabase(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(ctx, dbURL)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("node %d: Open: %v", i, err)
		}
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, highest int
	if err := conn.QueryRow(ctx, "SELECT count(*), max(version) FROM schema_migrations").Scan(&n, &highest); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) || highest != ms[len(ms)-1].version {
		t.Errorf("schema_migrations: %d rows up to %d, want %d up to %d", n, highest, len(ms), ms[len(ms)-1].version)
	}

	// A database a newer Handset migrated is refused, clearly.
	if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future.sql')"); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, dbURL)
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a database from a newer version")
	}
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("Open: %v, want ErrSchemaTooNew", err)
	}
	t.Logf("newer schema: %v", err)
	// The refusal released the lock: once the future row is gone, Open works again.
	if _, err := conn.Exec(ctx, "DELETE FROM schema_migrations WHERE version = 9999"); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s.Close()
}

func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5e9)
	defer cancel()
	if s, err := Open(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"); err == nil {
		s.Close()
		t.Fatal("Open of a closed port succeeded")
	} else {
		t.Logf("unreachable: %v", err)
	}
}

func TestInspect(t *testing.T) {
	url := newDatabase(t)
	before, err := Inspect(t.Context(), url)
	if err != nil || before.Version != 0 || before.Newest < 3 {
		t.Fatalf("fresh database: %+v %v", before, err)
	}
	s, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	after, err := Inspect(t.Context(), url)
	if err != nil || after.Version != after.Newest {
		t.Errorf("after Open: %+v %v", after, err)
	}
	if _, err := Inspect(t.Context(), "postgres://nobody@127.0.0.1:1/x?sslmode=disable&connect_timeout=2"); err == nil {
		t.Error("a server that is not there inspected fine")
	}
}
