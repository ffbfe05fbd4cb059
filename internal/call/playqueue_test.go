package call

import (
	"slices"
	"testing"
)

func (q *playQueue) len() int { return len(q.items()) }

func turnsOf(q *playQueue) []int {
	var turns []int
	for _, it := range q.items() {
		turns = append(turns, it.turn)
	}
	return turns
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// Items come out in the order they went in, through growth past a size class and through
// pops that leave room at the front of the storage.
func TestPlayQueueKeepsOrderAsItGrowsAndWraps(t *testing.T) {
	var q playQueue
	next, popped := 0, 0
	push := func(n int) {
		q.reserve(n)
		for range n {
			q.push(playItem{turn: next})
			next++
		}
	}
	pop := func(n int) {
		for range n {
			if got := q.items()[0].turn; got != popped {
				t.Fatalf("popped turn %d, want %d", got, popped)
			}
			q.popFront()
			popped++
		}
	}
	push(20)
	pop(15)
	push(20) // 25 queued: fits the 32-item class once the 15 popped slots are reused
	if got := cap(q.store.items); got != 32 {
		t.Fatalf("storage holds %d items, want the 32 of the smallest class", got)
	}
	push(40) // 65 queued: the next classes
	if got := cap(q.store.items); got != 128 {
		t.Fatalf("storage holds %d items, want 128", got)
	}
	if got, want := turnsOf(&q), seq(popped, next); !slices.Equal(got, want) {
		t.Fatalf("queued %v, want %v", got, want)
	}
	pop(next - popped)
	if q.store != nil || q.len() != 0 {
		t.Fatal("a drained queue still holds storage")
	}
}

// keep drops what it is told to, in order, hands each dropped item over once, and lets
// the storage go when nothing is kept.
func TestPlayQueueKeepDropsAndReleases(t *testing.T) {
	var q playQueue
	for i := range 10 {
		q.push(playItem{turn: i % 3})
	}
	q.popFront()
	var dropped []int
	q.keep(func(it playItem) bool { return it.turn != 1 }, func(it playItem) { dropped = append(dropped, it.turn) })
	if want := []int{1, 1, 1}; !slices.Equal(dropped, want) {
		t.Fatalf("dropped %v, want %v", dropped, want)
	}
	if got, want := turnsOf(&q), []int{2, 0, 2, 0, 2, 0}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	for _, it := range q.store.items[q.head+q.len() : cap(q.store.items)] {
		if it != (playItem{}) {
			t.Fatal("storage past the kept items still references an item")
		}
	}
	q.keep(func(playItem) bool { return false }, func(playItem) {})
	if q.store != nil {
		t.Fatal("a queue emptied by keep still holds storage")
	}
}

// A queue longer than the largest size class gets storage of its own, which is let go
// rather than pooled; the size classes cover every smaller length.
func TestPlayQueueStorageClasses(t *testing.T) {
	for _, tc := range []struct{ n, class int }{{1, 0}, {32, 0}, {33, 1}, {64, 1}, {65, 2}, {8192, maxItemClass - minItemClass}} {
		if c, ok := itemClass(tc.n); !ok || c != tc.class {
			t.Errorf("itemClass(%d) = %d, %v; want %d", tc.n, c, ok, tc.class)
		}
		if got := cap(getItemStore(tc.n).items); got < tc.n || got != 1<<(tc.class+minItemClass) {
			t.Errorf("storage for %d items holds %d", tc.n, got)
		}
	}
	if _, ok := itemClass(8193); ok {
		t.Error("8193 items fit a pooled class")
	}
	var q playQueue
	q.reserve(9000)
	if got := cap(q.store.items); got != 9000 {
		t.Fatalf("storage for 9000 items holds %d", got)
	}
}
