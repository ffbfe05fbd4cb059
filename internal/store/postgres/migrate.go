package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the pg_advisory_lock key the migrator holds, so several nodes starting
// at once migrate once ("handset" in ASCII).
const migrationLock int64 = 0x68616e64736574

// ErrSchemaTooNew is returned by Open when the database was migrated by a newer Handset.
var ErrSchemaTooNew = errors.New("postgres: the database schema is newer than this Handset")

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. Files are named
// NNNN_what.sql; versions must be unique.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("postgres: migration %s: name must be NNNN_what.sql", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("postgres: migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		b, err := migrationFiles.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate brings the database up to the newest embedded migration, each in its own
// transaction, holding an advisory lock for the whole run.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	defer func() {
		// A fresh context: the caller's may be done, and a lock left behind would block
		// every other node's start until this connection closes.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", migrationLock); err != nil {
			conn.Conn().Close(uctx) // closing the session releases the lock
		}
	}()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	newest := 0
	if len(ms) > 0 {
		newest = ms[len(ms)-1].version
	}
	if current > newest {
		return fmt.Errorf("%w: it is at version %d, this build knows up to %d; upgrade Handset (or point it at another database)",
			ErrSchemaTooNew, current, newest)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		err := pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", m.name, err)
		}
	}
	return nil
}

// Schema is what Inspect found.
type Schema struct {
	Version int // the database's schema version; 0 for a database Handset never used
	Newest  int // the newest this build knows
}

// Inspect connects to url and reads its schema version without changing anything (doctor
// uses it; Open migrates).
func Inspect(ctx context.Context, url string) (Schema, error) {
	ms, err := migrations()
	if err != nil {
		return Schema{}, err
	}
	s := Schema{Newest: ms[len(ms)-1].version}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return s, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return s, fmt.Errorf("postgres: %w", err)
	}
	if exists {
		err = conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&s.Version)
	}
	return s, err
}
