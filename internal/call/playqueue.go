package call

import (
	"math/bits"
	"sync"
)

// playQueue is the playout's queue of frames and marks, oldest first.
//
// A reply's frames are queued as fast as synthesis makes them, so a queue holds up to a
// whole reply: hundreds of items. A call keeps its queue's storage only while it has
// something queued: once the queue drains, the storage goes back to a pool shared by every
// call, sorted by size class, and the next reply (of any call) takes it from there. So a
// listening call holds no queue storage, and replies reuse storage instead of making it.
//
// Not safe for concurrent use; the playout guards it.
type playQueue struct {
	store *itemStore // nil while empty
	head  int        // index of the oldest item in store.items
}

// itemStore is queue storage as the pools keep it: a pointer, so putting it back
// allocates nothing.
type itemStore struct{ items []playItem }

// Storage size classes hold 2^minItemClass to 2^maxItemClass items: 32 items is 640 ms of
// audio, 8192 items nearly three minutes. A queue longer than that gets storage of its own
// size, which is not pooled.
const (
	minItemClass = 5
	maxItemClass = 13
)

var itemPools [maxItemClass - minItemClass + 1]sync.Pool

// itemClass is the pool index for storage of at least n items; ok is false above the largest.
func itemClass(n int) (class int, ok bool) {
	c := max(bits.Len(uint(n-1)), minItemClass) - minItemClass
	return c, c < len(itemPools)
}

func getItemStore(n int) *itemStore {
	c, ok := itemClass(n)
	if !ok {
		return &itemStore{items: make([]playItem, 0, n)}
	}
	if s, _ := itemPools[c].Get().(*itemStore); s != nil {
		return s
	}
	return &itemStore{items: make([]playItem, 0, 1<<(c+minItemClass))}
}

// putItemStore gives storage back; it must hold no items (they reference frames).
func putItemStore(s *itemStore) {
	n := cap(s.items)
	if c, ok := itemClass(n); ok && n == 1<<(c+minItemClass) {
		s.items = s.items[:0]
		itemPools[c].Put(s)
	}
}

// items returns the queued items, oldest first; valid until the queue changes.
func (q *playQueue) items() []playItem {
	if q.store == nil {
		return nil
	}
	return q.store.items[q.head:]
}

// reserve makes room for n more items.
func (q *playQueue) reserve(n int) {
	queued := q.items()
	need := len(queued) + n
	switch {
	case q.store == nil:
		q.store = getItemStore(need)
	case len(q.store.items)+n <= cap(q.store.items):
		// fits after the tail
	case need <= cap(q.store.items):
		// fits once the popped slots at the front are reused
		s := q.store.items
		k := copy(s, queued)
		clear(s[k:])
		q.store.items, q.head = s[:k], 0
	default:
		next := getItemStore(need)
		next.items = append(next.items, queued...)
		clear(queued)
		putItemStore(q.store)
		q.store, q.head = next, 0
	}
}

// push appends one item; reserve room first to append a batch with one growth at most.
func (q *playQueue) push(it playItem) {
	q.reserve(1)
	q.store.items = append(q.store.items, it)
}

// popFront removes the oldest item; the queue must not be empty.
func (q *playQueue) popFront() {
	q.store.items[q.head] = playItem{}
	q.head++
	if q.head == len(q.store.items) {
		q.release()
	}
}

// keep keeps the items for which f is true, in order, and calls dropped for the others.
func (q *playQueue) keep(f func(playItem) bool, dropped func(playItem)) {
	queued := q.items()
	kept := queued[:0]
	for _, it := range queued {
		if f(it) {
			kept = append(kept, it)
		} else {
			dropped(it)
		}
	}
	clear(queued[len(kept):])
	if len(kept) == 0 {
		q.release()
		return
	}
	q.store.items = q.store.items[:q.head+len(kept)]
}

// release gives the storage back to the pools; the queue is empty.
func (q *playQueue) release() {
	if q.store == nil {
		return
	}
	clear(q.store.items)
	putItemStore(q.store)
	q.store, q.head = nil, 0
}
