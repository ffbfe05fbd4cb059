package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/storetest"
)

// benchCalls is how many calls BenchmarkListCalls lists from.
const benchCalls = 100_000

// BenchmarkListCalls lists calls from a database of 100,000 calls and their transcripts.
func BenchmarkListCalls(b *testing.B) {
	if testing.Short() {
		b.Skip("seeding 100,000 calls takes a while; not with -short")
	}
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "handset.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	if err := seed(b.Context(), s.w, benchCalls); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d calls in %v", benchCalls, time.Since(start).Round(time.Millisecond))
	storetest.BenchmarkListCalls(b, s)
}

// seed writes n generated calls and their lines, a few thousand calls a transaction.
func seed(ctx context.Context, w *sql.DB, n int) error {
	const perTx = 5000
	var (
		tx           *sql.Tx
		insCall, ins *sql.Stmt
		count        int
		err          error
	)
	flush := func() error {
		if tx == nil {
			return nil
		}
		err := tx.Commit()
		tx = nil
		return err
	}
	err = storetest.GenerateCalls(n, func(c store.Call, lines []store.TranscriptLine) error {
		if tx == nil {
			if tx, err = w.BeginTx(ctx, nil); err != nil {
				return err
			}
			if insCall, err = tx.PrepareContext(ctx, `INSERT INTO calls (`+callColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
				return err
			}
			if ins, err = tx.PrepareContext(ctx, `INSERT INTO transcript_lines (call_id, turn, role, text, at, interrupted)
				VALUES (?, ?, ?, ?, ?, ?)`); err != nil {
				return err
			}
		}
		if _, err := insCall.ExecContext(ctx, string(c.ID), c.Carrier, c.CarrierRef, string(c.Direction), c.From, c.To,
			c.CallerHash, c.Agent, c.Node, encTime(c.StartedAt), encTime(c.EndedAt), c.Outcome, c.Journal, c.JobID,
			c.Summary.Turns, c.Summary.Interrupted, c.Summary.Stage, c.Summary.Problem); err != nil {
			return err
		}
		for _, l := range lines {
			if _, err := ins.ExecContext(ctx, string(l.CallID), l.Turn, string(l.Role), l.Text, encTime(l.At), l.Interrupted); err != nil {
				return err
			}
		}
		if count++; count%perTx == 0 {
			return flush()
		}
		return nil
	})
	if err != nil {
		if tx != nil {
			_ = tx.Rollback()
		}
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	_, err = w.ExecContext(ctx, `ANALYZE`)
	return err
}

// BenchmarkCarrierMemory times a carrier's webhooks' store work for one call.
func BenchmarkCarrierMemory(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "handset.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchmarkCarrierMemory(b, s)
}
