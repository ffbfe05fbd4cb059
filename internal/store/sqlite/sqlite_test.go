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
	"testing"
	"testing/fstest"
	"time"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/storetest"
)

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "data", "handset.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
}

func TestOpenCreatesFileAndFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "handset.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("database file mode %v, want 0600", fi.Mode().Perm())
	}
	var mode string
	if err := s.w.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	for _, db := range []*sql.DB{s.w, s.r} {
		var fk, busy int
		if err := db.QueryRowContext(t.Context(), `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
			t.Errorf("foreign_keys = %d, %v", fk, err)
		}
		if err := db.QueryRowContext(t.Context(), `PRAGMA busy_timeout`).Scan(&busy); err != nil || busy != 5000 {
			t.Errorf("busy_timeout = %d, %v", busy, err)
		}
	}
	// the read pool cannot write
	if _, err := s.r.ExecContext(t.Context(), `DELETE FROM jobs`); err == nil {
		t.Error("a reader connection could write")
	}
}

func TestOpenRejectsNonPaths(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := Open(t.Context(), p); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

func TestOpenTwiceIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "handset.db")
	for range 3 {
		s, err := Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := s.r.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		want, _ := migrations(migrationsFS())
		if n != len(want) {
			t.Errorf("schema_migrations has %d rows, want %d", n, len(want))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "handset.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(t.Context(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', '2040-01-01T00:00:00.000000Z')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(t.Context(), path)
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open(newer database) = %v, want ErrNewerSchema", err)
	}
	for _, part := range []string{"9999", path, "upgrade Handset"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not mention %q", err, part)
		}
	}
}

func TestMigrateStepByStep(t *testing.T) {
	ctx := t.Context()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	v1 := fstest.MapFS{"0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);")}}
	v2 := fstest.MapFS{
		"0001_a.sql": v1["0001_a.sql"],
		"0002_b.sql": {Data: []byte("CREATE TABLE b (y TEXT);\nINSERT INTO a VALUES (2);")},
		"README.md":  {Data: []byte("not a migration")},
	}
	for _, step := range []struct {
		fsys fstest.MapFS
		want int
	}{{v1, 1}, {v1, 0}, {v2, 1}, {v2, 0}} {
		n, err := migrate(ctx, db, step.fsys)
		if err != nil || n != step.want {
			t.Fatalf("migrate = %d, %v; want %d", n, err, step.want)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM a`).Scan(&n); err != nil || n != 2 {
		t.Errorf("rows in a = %d, %v; want 2 (each migration ran once)", n, err)
	}
	if _, err := migrate(ctx, db, v1); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("migrate(older set) = %v, want ErrNewerSchema", err)
	}
	// a failing migration leaves nothing behind
	bad := fstest.MapFS{
		"0001_a.sql": v2["0001_a.sql"], "0002_b.sql": v2["0002_b.sql"],
		"0003_c.sql": {Data: []byte("CREATE TABLE c (z INTEGER); SELECT nonsense FROM nowhere;")},
	}
	if _, err := migrate(ctx, db, bad); err == nil || !strings.Contains(err.Error(), "0003_c.sql") {
		t.Errorf("migrate(bad) = %v, want an error naming 0003_c.sql", err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'c'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("a failed migration left table c behind (%d, %v)", n, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"bad name":  {"first.sql": {Data: []byte("SELECT 1")}},
		"duplicate": {"0001_a.sql": {Data: []byte("SELECT 1")}, "01_b.sql": {Data: []byte("SELECT 1")}},
	} {
		if _, err := migrations(fsys); err == nil {
			t.Errorf("%s: migrations accepted %v", name, fsys)
		}
	}
}

func TestSecondStoreSeesData(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "handset.db")
	a, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := a.StartCall(ctx, store.Call{ID: "c1", From: "+15550001111", StartedAt: now}); err != nil {
		t.Fatal(err)
	}
	c, err := b.Call(ctx, "c1")
	if err != nil || c.From != "+15550001111" {
		t.Fatalf("second store: Call = %+v, %v", c, err)
	}
	if err := b.StartCall(ctx, store.Call{ID: "c1", StartedAt: now}); !errors.Is(err, store.ErrDuplicate) {
		t.Errorf("second store: StartCall(same id) = %v", err)
	}
	j, err := a.Enqueue(ctx, store.NewJob{Kind: "k", RunAt: now})
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := b.Claim(ctx, "node-b", nil, time.Minute, now)
	if err != nil || !ok || got.ID != j.ID {
		t.Fatalf("second store: Claim = %+v %v %v", got, ok, err)
	}
	if err := a.Complete(ctx, j.ID, "node-a", nil, now); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("first store: Complete(other owner) = %v", err)
	}
	if err := b.Complete(ctx, j.ID, "node-b", []byte(`1`), now); err != nil {
		t.Fatal(err)
	}
	if j, err := a.Job(ctx, j.ID); err != nil || j.State != store.JobCompleted {
		t.Errorf("first store sees %+v, %v", j, err)
	}
}

// TestTwoStoresClaimConcurrently: two processes' worth of stores on one file share the
// jobs without a double claim (BEGIN IMMEDIATE and the busy timeout between them).
func TestTwoStoresClaimConcurrently(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "handset.db")
	var stores []*Store
	for range 2 {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	const jobs = 100
	for range jobs {
		if _, err := stores[0].Enqueue(ctx, store.NewJob{Kind: "k", RunAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu      sync.Mutex
		claimed = map[int64]int{}
		wg      sync.WaitGroup
	)
	for i := range 4 {
		s, owner := stores[i%2], fmt.Sprintf("w%d", i)
		wg.Go(func() {
			for {
				j, ok, err := s.Claim(ctx, owner, nil, time.Hour, now)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				claimed[j.ID]++
				mu.Unlock()
				if err := s.Complete(ctx, j.ID, owner, nil, now); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if len(claimed) != jobs {
		t.Errorf("%d jobs claimed, want %d", len(claimed), jobs)
	}
	for id, n := range claimed {
		if n != 1 {
			t.Errorf("job %d claimed %d times", id, n)
		}
	}
}

func TestCloseIdempotent(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "handset.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := s.Call(t.Context(), "c1"); err == nil {
		t.Error("Call after Close succeeded")
	}
}

func TestTransciptOfUnknownCall(t *testing.T) {
	s := openTemp(t)
	err := s.AppendTranscript(t.Context(), []store.TranscriptLine{{CallID: "nope", Turn: 1, Role: "user", Text: "hi", At: time.Now()}})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AppendTranscript(unknown call) = %v, want ErrNotFound", err)
	}
}

func TestEndCallKeepsFirstEnd(t *testing.T) {
	ctx := t.Context()
	s := openTemp(t)
	t0 := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.StartCall(ctx, store.Call{ID: "c1", StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.EndCall(ctx, "c1", t0.Add(time.Minute), "caller_hangup"); err != nil {
		t.Fatal(err)
	}
	if err := s.EndCall(ctx, "c1", t0.Add(2*time.Minute), "completed"); err != nil {
		t.Fatal(err)
	}
	c, _ := s.Call(ctx, "c1")
	if c.Outcome != "caller_hangup" || !c.EndedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("call = %+v, want the first end kept", c)
	}
}

func TestTimeEncoding(t *testing.T) {
	tm := time.Date(2031, 3, 14, 15, 9, 26, 535897932, time.FixedZone("x", -7*3600))
	enc := encTime(tm).(string)
	if enc != "2031-03-14T22:09:26.535897Z" {
		t.Errorf("encTime = %q", enc)
	}
	dec, err := decTime(sql.NullString{String: enc, Valid: true})
	if err != nil || !dec.Equal(tm.Truncate(time.Microsecond)) || dec.Location() != time.UTC {
		t.Errorf("decTime = %v, %v", dec, err)
	}
	if encTime(time.Time{}) != nil {
		t.Error("the zero time is not NULL")
	}
	if d, err := decTime(sql.NullString{}); err != nil || !d.IsZero() {
		t.Errorf("decTime(NULL) = %v, %v", d, err)
	}
}

func BenchmarkEnqueueClaimComplete(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	payload := []byte(`{"to":"+15550001111","agent":"hermes"}`)
	b.ReportAllocs()
	for b.Loop() {
		j, err := s.Enqueue(ctx, store.NewJob{Kind: "outbound_call", Payload: payload, RunAt: now})
		if err != nil {
			b.Fatal(err)
		}
		c, ok, err := s.Claim(ctx, "bench", nil, time.Minute, now)
		if err != nil || !ok || c.ID != j.ID {
			b.Fatalf("Claim = %d %v %v", c.ID, ok, err)
		}
		if err := s.Complete(ctx, j.ID, "bench", []byte(`{}`), now); err != nil {
			b.Fatal(err)
		}
	}
}
