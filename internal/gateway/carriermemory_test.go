package gateway

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/postgres"
	"github.com/handset-voice/handset/internal/store/postgres/pgtest"
	"github.com/handset-voice/handset/internal/store/sqlite"
)

func openSQLiteStore(t *testing.T) store.Store {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "handset.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestCarrierMemory: the store-backed memory keeps the call ledger's rules on both stores.
func TestCarrierMemory(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		carriertest.RunMemory(t, func(t *testing.T) carrier.Memory { return memoriesOf(openSQLiteStore(t))("telnyx") })
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		carriertest.RunMemory(t, func(t *testing.T) carrier.Memory {
			s, err := postgres.Open(t.Context(), pgtest.NewDatabase(t, "handset_gateway"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return memoriesOf(s)("telnyx")
		})
	})
}

// TestCarrierMemoriesApart: each carrier's memory is its own; the same names at two
// carriers are two calls.
func TestCarrierMemoriesApart(t *testing.T) {
	ctx := t.Context()
	memory := memoriesOf(openSQLiteStore(t))
	telnyx, plivo := memory("telnyx"), memory("plivo")
	now := time.Now()
	if err := telnyx.Progressed(ctx, carrier.Progress{Ref: "c1", Status: carrier.StatusBusy}, now); err != nil {
		t.Fatal(err)
	}
	if p, ok, err := plivo.Progress(ctx, "c1"); ok || err != nil {
		t.Errorf("another carrier's call: %+v, %v, %v; want none", p, ok, err)
	}
	if first, err := telnyx.Once(ctx, "e1", now); err != nil || !first {
		t.Fatalf("Once: %v, %v", first, err)
	}
	if first, err := plivo.Once(ctx, "e1", now); err != nil || !first {
		t.Errorf("a name seen at another carrier: first %v, %v; want first", first, err)
	}
	if err := telnyx.Alias(ctx, "c1", "r1"); err != nil {
		t.Fatal(err)
	}
	if err := plivo.Alias(ctx, "c2", "r1"); err != nil {
		t.Errorf("an alias taken at another carrier: %v", err)
	}
	if err := telnyx.Alias(ctx, "c2", "r1"); !errors.Is(err, carrier.ErrAliasTaken) {
		t.Errorf("an alias taken at the same carrier: %v, want ErrAliasTaken", err)
	}
}

// TestCarrierMemoryRefusesHugeNames: a forged request cannot make the store keep huge keys.
func TestCarrierMemoryRefusesHugeNames(t *testing.T) {
	ctx := t.Context()
	m := memoriesOf(openSQLiteStore(t))("telnyx")
	huge := strings.Repeat("x", maxMemoryName+1)
	if _, err := m.Once(ctx, huge, time.Now()); err == nil {
		t.Error("Once kept a huge key")
	}
	if err := m.Progressed(ctx, carrier.Progress{Ref: huge}, time.Now()); err == nil {
		t.Error("Progressed kept a huge ref")
	}
	if err := m.Alias(ctx, "c1", huge); err == nil {
		t.Error("Alias kept a huge alias")
	}
	if _, err := m.Once(ctx, strings.Repeat("x", maxMemoryName), time.Now()); err != nil {
		t.Errorf("Once refused a key of the largest size: %v", err)
	}
}
