package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

// The tests run against a real PostgreSQL: HANDSET_TEST_DATABASE_URL names a server where
// the user may create databases (./scripts/postgres.sh starts a private one and writes its
// URL to .cache/postgres/url; scripts/test.sh exports it). Each test gets a database of its
// own, handset_test_<random>, dropped when it ends.
const envURL = "HANDSET_TEST_DATABASE_URL"

func TestMain(m *testing.M) {
	if os.Getenv(envURL) == "" {
		fmt.Fprintf(os.Stderr, "store/postgres tests need a real PostgreSQL: run ./scripts/postgres.sh, then\n"+
			"  %s=$(cat .cache/postgres/url) go test ./internal/store/postgres/\n"+
			"(scripts/test.sh does both)\n", envURL)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m)
}

// newDatabase creates an empty database for t and returns its URL; t's cleanup drops it.
func newDatabase(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(envURL)
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", envURL, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "handset_test_" + hex.EncodeToString(b)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s (is ./scripts/postgres.sh running?): %v", admin, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

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
