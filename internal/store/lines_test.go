package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/sqlite"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "handset.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.StartCall(context.Background(), store.Call{ID: "c1", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return st
}

func line(i int) store.TranscriptLine {
	return store.TranscriptLine{CallID: "c1", Turn: i, Role: voice.RoleUser, Text: fmt.Sprint("line ", i), At: time.Now()}
}

func TestLineWriterSavesInOrderAndFlushes(t *testing.T) {
	st := openSQLite(t)
	w := store.NewLineWriter(st, slog.New(slog.DiscardHandler))
	for i := range 40 {
		w.Add(line(i))
	}
	if err := w.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := st.Transcript(t.Context(), "c1")
	if err != nil || len(got) != 40 {
		t.Fatalf("after Flush: %d lines, %v", len(got), err)
	}
	for i, l := range got {
		if l.Text != fmt.Sprint("line ", i) {
			t.Fatalf("line %d = %q", i, l.Text)
		}
	}
	w.Add(line(40))
	w.Close() // saves what is left
	if got, _ := st.Transcript(t.Context(), "c1"); len(got) != 41 {
		t.Errorf("after Close: %d lines, want 41", len(got))
	}
}

// stalled blocks AppendTranscript until released, like a database that stopped answering.
type stalled struct {
	store.Store
	release chan struct{}
}

func (s stalled) AppendTranscript(ctx context.Context, l []store.TranscriptLine) error {
	<-s.release
	return s.Store.AppendTranscript(ctx, l)
}

func TestLineWriterNeverBlocksTheCall(t *testing.T) {
	st := stalled{Store: openSQLite(t), release: make(chan struct{})}
	w := store.NewLineWriter(st, slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() {
		for i := range 10000 {
			w.Add(line(i))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Add blocked behind a stalled store")
	}
	if w.Dropped() == 0 {
		t.Error("10000 lines behind a stalled store: none counted as dropped")
	}
	close(st.release)
	w.Close()
	got, _ := st.Transcript(t.Context(), "c1")
	if int64(len(got))+w.Dropped() != 10000 {
		t.Errorf("saved %d + dropped %d != 10000 added", len(got), w.Dropped())
	}
}

func TestLineWriterAfterClose(t *testing.T) {
	st := openSQLite(t)
	w := store.NewLineWriter(st, slog.New(slog.DiscardHandler))
	w.Add(line(1))
	w.Close()
	w.Add(line(2)) // a late line from a call that just ended: ignored, no panic
	if err := w.Flush(t.Context()); err != nil {
		t.Errorf("Flush after Close: %v", err)
	}
	w.Close()
	if got, _ := st.Transcript(t.Context(), "c1"); len(got) != 1 {
		t.Errorf("%d lines saved, want the one added before Close", len(got))
	}
}

// counting counts the transactions AppendTranscript makes.
type counting struct {
	store.Store
	batches atomic.Int32
}

func (c *counting) AppendTranscript(ctx context.Context, l []store.TranscriptLine) error {
	c.batches.Add(1)
	return c.Store.AppendTranscript(ctx, l)
}

// Lines that trickle in, as calls' turns do, are saved a few at a time, not one
// transaction each, and are readable without a flush soon after.
func TestLineWriterGathersTricklingLines(t *testing.T) {
	st := &counting{Store: openSQLite(t)}
	w := store.NewLineWriter(st, slog.New(slog.DiscardHandler))
	defer w.Close()
	for i := range 20 {
		w.Add(line(i))
		time.Sleep(5 * time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := st.Transcript(t.Context(), "c1")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 lines readable 5 s after the last, no flush", len(got))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := st.batches.Load(); n > 5 {
		t.Errorf("20 lines 5 ms apart took %d transactions, want a few", n)
	}
}
