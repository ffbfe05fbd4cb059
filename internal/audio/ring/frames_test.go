package ring

import (
	"encoding/binary"
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func frame(i int) []byte { return []byte(fmt.Sprintf("frame-%03d", i)) }

func popAll(t *testing.T, f *Frames) []string {
	t.Helper()
	var out []string
	buf := make([]byte, 0, f.FrameCap())
	for {
		b, ok := f.Pop(buf)
		if !ok {
			if len(b) != 0 {
				t.Fatalf("Pop on empty ring returned %q", b)
			}
			return out
		}
		out = append(out, string(b))
	}
}

func equal(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestFIFOAndDropOldest(t *testing.T) {
	f := NewFrames(3, 16)
	for i := range 3 {
		if f.Push(frame(i)) {
			t.Fatalf("push %d into a ring with room dropped", i)
		}
	}
	if f.Len() != 3 || f.Dropped() != 0 {
		t.Fatalf("Len %d Dropped %d, want 3 0", f.Len(), f.Dropped())
	}
	if !f.Push(frame(3)) || !f.Push(frame(4)) {
		t.Fatal("push into a full ring did not report a drop")
	}
	if f.Dropped() != 2 || f.Len() != 3 {
		t.Fatalf("Len %d Dropped %d, want 3 2", f.Len(), f.Dropped())
	}
	got := popAll(t, f)
	if want := []string{"frame-002", "frame-003", "frame-004"}; !equal(got, want) {
		t.Errorf("popped %v, want %v (oldest dropped)", got, want)
	}
	if f.Len() != 0 {
		t.Errorf("Len after draining = %d", f.Len())
	}
}

func TestPushCopiesTheFrame(t *testing.T) {
	f := NewFrames(2, 8)
	b := []byte("abc")
	f.Push(b)
	b[0] = 'X'
	if got, _ := f.Pop(nil); string(got) != "abc" {
		t.Errorf("Pop = %q, want the bytes as they were at Push", got)
	}
}

func TestLongFramesAreSplitNotTruncated(t *testing.T) {
	f := NewFrames(4, 4)
	f.Push([]byte("0123456789")) // 3 slots: 4+4+2
	if f.Len() != 3 {
		t.Fatalf("Len = %d, want 3", f.Len())
	}
	if got := popAll(t, f); !equal(got, []string{"0123", "4567", "89"}) {
		t.Errorf("popped %v", got)
	}
	// A frame longer than the whole ring keeps its newest bytes and counts the rest.
	f.Push([]byte("ab"))
	if !f.Push([]byte("ABCDEFGHIJKLMNOPQRST")) { // 5 pieces into 4 slots
		t.Fatal("no drop reported")
	}
	if f.Dropped() != 2 {
		t.Errorf("Dropped = %d, want 2 (the old frame and the first piece)", f.Dropped())
	}
	if got := popAll(t, f); !equal(got, []string{"EFGH", "IJKL", "MNOP", "QRST"}) {
		t.Errorf("popped %v", got)
	}
}

func TestEmptyPushIgnored(t *testing.T) {
	f := NewFrames(2, 4)
	if f.Push(nil) || f.Len() != 0 {
		t.Error("empty push queued something")
	}
	select {
	case <-f.Notify():
		t.Error("empty push signalled Notify")
	default:
	}
}

func TestPopGrowsSmallDst(t *testing.T) {
	f := NewFrames(1, 32)
	f.Push([]byte("a longer frame than dst"))
	got, ok := f.Pop(make([]byte, 3))
	if !ok || string(got) != "a longer frame than dst" {
		t.Errorf("Pop = %q %v", got, ok)
	}
}

func TestNotifyIsNonBlockingAndCoalesces(t *testing.T) {
	f := NewFrames(8, 4)
	for i := range 5 {
		f.Push(frame(i)[:4]) // must not block although nobody receives
	}
	select {
	case <-f.Notify():
	default:
		t.Fatal("no wake-up after Push")
	}
	select {
	case <-f.Notify():
		t.Fatal("a second wake-up for the same burst")
	default:
	}
	if f.Len() != 5 {
		t.Errorf("Len = %d, want 5 (one wake-up stands for all)", f.Len())
	}
}

func TestReset(t *testing.T) {
	f := NewFrames(2, 16)
	for i := range 3 {
		f.Push(frame(i))
	}
	f.Reset()
	if f.Len() != 0 || len(popAll(t, f)) != 0 {
		t.Fatal("frames left after Reset")
	}
	if f.Dropped() != 1 {
		t.Errorf("Dropped = %d after Reset, want the 1 real drop kept", f.Dropped())
	}
	f.Push(frame(9))
	if got := popAll(t, f); !equal(got, []string{"frame-009"}) {
		t.Errorf("after Reset popped %v", got)
	}
}

func TestConcurrentProducerConsumer(t *testing.T) {
	const total = 20000
	f := NewFrames(16, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [8]byte
		for i := range total {
			binary.BigEndian.PutUint64(b[:], uint64(i))
			f.Push(b[:])
		}
	}()
	var got []uint64
	buf := make([]byte, 0, 8)
	drain := func() {
		for {
			b, ok := f.Pop(buf)
			if !ok {
				return
			}
			got = append(got, binary.BigEndian.Uint64(b))
		}
	}
	for finished := false; !finished; {
		select {
		case <-f.Notify():
		case <-done:
			finished = true
		}
		drain()
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("frame %d after frame %d: order broken", got[i], got[i-1])
		}
	}
	if len(got) == 0 || got[len(got)-1] != total-1 {
		t.Fatalf("last frame received %v, want %d", got[len(got)-1:], total-1)
	}
	if n := uint64(len(got)) + f.Dropped(); n != total {
		t.Errorf("received %d + dropped %d = %d, want %d", len(got), f.Dropped(), n, total)
	}
	t.Logf("received %d, dropped %d", len(got), f.Dropped())
}

func TestPushPopDoNotAllocate(t *testing.T) {
	f := NewFrames(50, 160)
	in := make([]byte, 160)
	out := make([]byte, 0, 160)
	if n := testing.AllocsPerRun(100, func() {
		f.Push(in)
		out, _ = f.Pop(out)
	}); n != 0 {
		t.Errorf("%.0f allocations per Push+Pop", n)
	}
}

func BenchmarkPushPop20ms(b *testing.B) {
	f := NewFrames(50, 160) // one second of 8 kHz mu-law
	in := make([]byte, 160)
	out := make([]byte, 0, 160)
	b.ReportAllocs()
	for b.Loop() {
		f.Push(in)
		out, _ = f.Pop(out)
	}
}

func BenchmarkPushFull20ms(b *testing.B) {
	f := NewFrames(50, 640) // one second of 16 kHz PCM16, always full: every push drops
	in := make([]byte, 640)
	for range 50 {
		f.Push(in)
	}
	b.ReportAllocs()
	for b.Loop() {
		f.Push(in)
	}
}
