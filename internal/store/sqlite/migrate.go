package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var embedded embed.FS

// ErrNewerSchema is returned by Open for a database a newer Handset has migrated: this one
// does not know its schema and refuses to touch it.
var ErrNewerSchema = errors.New("the database schema is newer than this Handset")

// migration is one numbered SQL file, "0001_init.sql".
type migration struct {
	version int
	name    string
	sql     string
}

// migrations reads the numbered *.sql files at the root of fsys, in version order.
func migrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be <version>_<what>.sql", name)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", ms[i-1].name, ms[i].name, ms[i].version)
		}
	}
	return ms, nil
}

// migrate brings db's schema up to date with the migrations in fsys and returns how many
// it applied. It runs in one write transaction (BEGIN IMMEDIATE on the writer), so two
// processes opening the same new file do not both migrate it, and a failed migration
// leaves the schema as it was. A database that has applied a version fsys does not have
// is from a newer Handset: ErrNewerSchema.
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS) (applied int, err error) {
	ms, err := migrations(fsys)
	if err != nil {
		return 0, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err = tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	) STRICT`); err != nil {
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}
	done := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var v int
		if err = rows.Scan(&v); err != nil {
			rows.Close()
			return 0, err
		}
		done[v] = true
	}
	if err = errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, err
	}
	latest := 0
	if len(ms) > 0 {
		latest = ms[len(ms)-1].version
	}
	for v := range done {
		if v > latest {
			return 0, fmt.Errorf("%w (it is at version %d, this Handset knows up to %d): upgrade Handset or point it at another data dir", ErrNewerSchema, maxKey(done), latest)
		}
	}
	for _, m := range ms {
		if done[m.version] {
			continue
		}
		if _, err = tx.ExecContext(ctx, m.sql); err != nil {
			return 0, fmt.Errorf("migration %s: %w", path.Base(m.name), err)
		}
		if _, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, encTime(time.Now())); err != nil {
			return 0, fmt.Errorf("record migration %s: %w", m.name, err)
		}
		applied++
	}
	if err = tx.Commit(); err != nil {
		return 0, err
	}
	return applied, nil
}

func maxKey(m map[int]bool) int {
	top := 0
	for k := range m {
		top = max(top, k)
	}
	return top
}

// migrationsFS is the embedded migrations folder.
func migrationsFS() fs.FS {
	sub, err := fs.Sub(embedded, "migrations")
	if err != nil {
		panic(err) // the folder is embedded at build time
	}
	return sub
}
