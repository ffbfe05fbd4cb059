// Package sqlite is the default store.Store: one SQLite file in the data dir, through the
// pure-Go modernc.org/sqlite driver (so the core still builds with CGO_ENABLED=0).
//
// The file runs in WAL mode with a busy timeout and foreign keys on. SQLite has one writer
// at a time, so the Store keeps a single writer connection (every write transaction is
// BEGIN IMMEDIATE) and a small pool of read-only connections that read beside it. The
// schema comes from embedded, numbered SQL migrations applied at Open. Times are stored
// as fixed-width UTC text with microseconds. Job transitions are compare-and-set UPDATEs
// on the job's id, state and lease owner (and version inside a transaction), checked with
// RowsAffected. Several processes may open the same file; it is meant for one node
// (PostgreSQL serves several).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sqlite "modernc.org/sqlite"

	"github.com/handset-voice/handset/internal/store"
)

// readers is the size of the read-only pool.
const readers = 4

// Store is a store.Store on one SQLite file.
type Store struct {
	path string
	w    *sql.DB // the single writer connection
	r    *sql.DB // read-only connections

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it, and its folder, when missing) the database at path and brings
// its schema up to date. A database migrated by a newer Handset is refused
// (ErrNewerSchema).
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, fmt.Errorf("sqlite store: %q is not a file path", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	// The file holds raw phone numbers: create it readable by its owner only (SQLite gives
	// its -wal and -shm files the same mode).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	_ = f.Close()

	const common = "_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)"
	w, err := sql.Open("sqlite", path+"?"+common+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if _, err := migrate(ctx, w, migrationsFS()); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", path+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	if err := r.PingContext(ctx); err != nil {
		_ = errors.Join(w.Close(), r.Close())
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	return &Store{path: path, w: w, r: r}, nil
}

// Close closes the database; a second Close returns the first one's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.r.Close(), s.w.Close())
	})
	return s.closeErr
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// timeFormat is how times are stored: UTC, fixed width, microseconds, so that text order
// is time order.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// encTime is t as stored; the zero time is NULL.
func encTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(timeFormat)
}

// decTime reads a stored time; NULL is the zero time.
func decTime(s sql.NullString) (time.Time, error) {
	if !s.Valid || s.String == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(timeFormat, s.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite store: bad time %q: %w", s.String, err)
	}
	return t.UTC(), nil
}

// nullString is s, or NULL when empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// sqliteConstraintForeignKey is SQLITE_CONSTRAINT_FOREIGNKEY.
const sqliteConstraintForeignKey = 787

func isForeignKey(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code() == sqliteConstraintForeignKey
}

// rollback ends tx when err is set; use as defer rollback(tx, &err).
func rollback(tx *sql.Tx, err *error) {
	if *err != nil {
		_ = tx.Rollback()
	}
}
