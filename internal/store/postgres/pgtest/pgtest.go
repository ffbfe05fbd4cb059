// Package pgtest gives a test an empty database of its own on the test PostgreSQL server
// (HANDSET_TEST_DATABASE_URL; ./scripts/postgres.sh starts a private one and
// scripts/test.sh exports its URL), so the tests that need PostgreSQL reach it one way and
// pgx stays inside store/postgres. Import it only from tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/handset-voice/handset/internal/testpeer"
)

// NewDatabase creates an empty database named prefix_<random> for t and returns its URL;
// t's cleanup drops it. Without a server it is a missing peer (testpeer.PostgreSQL).
func NewDatabase(t testing.TB, prefix string) string {
	t.Helper()
	admin := testpeer.DatabaseURL(t)
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", testpeer.DatabaseURLEnv, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := prefix + "_" + hex.EncodeToString(b)

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
