package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	s, _ := openStore(b)
	start := time.Now()
	if err := seed(b.Context(), s, benchCalls); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d calls in %v", benchCalls, time.Since(start).Round(time.Millisecond))
	storetest.BenchmarkListCalls(b, s)
}

// seed copies n generated calls and their lines in, then analyzes the tables.
func seed(ctx context.Context, s *Store, n int) error {
	var calls, lines [][]any
	err := storetest.GenerateCalls(n, func(c store.Call, ls []store.TranscriptLine) error {
		calls = append(calls, []any{string(c.ID), c.Carrier, c.CarrierRef, string(c.Direction), c.From, c.To,
			c.CallerHash, c.Agent, c.Node, c.StartedAt, ts(c.EndedAt), c.Outcome, c.Journal, c.JobID,
			int32(c.Summary.Turns), int32(c.Summary.Interrupted), c.Summary.Stage, c.Summary.Problem})
		for _, l := range ls {
			lines = append(lines, []any{string(l.CallID), int32(l.Turn), string(l.Role), l.Text, l.At, l.Interrupted})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"calls"}, []string{"id", "carrier", "carrier_ref", "direction",
		"from_number", "to_number", "caller_hash", "agent", "node", "started_at", "ended_at", "outcome", "journal", "job_id",
		"summary_turns", "summary_interrupted", "summary_stage", "summary_problem"}, pgx.CopyFromRows(calls)); err != nil {
		return err
	}
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"transcript_lines"},
		[]string{"call_id", "turn", "role", "text", "at", "interrupted"}, pgx.CopyFromRows(lines)); err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `VACUUM ANALYZE calls, transcript_lines`)
	return err
}

// BenchmarkCarrierMemory times a carrier's webhooks' store work for one call.
func BenchmarkCarrierMemory(b *testing.B) {
	s, _ := openStore(b)
	storetest.BenchmarkCarrierMemory(b, s)
}
