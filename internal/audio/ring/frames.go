// Package ring owns Frames, the bounded audio queue of a call: a fixed ring of byte frames
// that never blocks the producer, drops the oldest frame when full and counts the drops.
// It serves as each call's inbound audio queue (carrier reader goroutine in, call owner
// goroutine out) and as the short "rescue" history of recent frames replayed to STT.
package ring

import "sync"

// Frames is a fixed-capacity FIFO of byte frames with preallocated slots. Push copies a
// frame in; when every slot is full it first drops the oldest frame and counts it. Pop copies
// the oldest frame out. Frames longer than the slot size are split over several slots, so
// no audio is lost to truncation.
//
// All methods are safe for concurrent use by one producer and one consumer (and any number
// of goroutines reading Len or Dropped); the mutex is never held while calling out.
type Frames struct {
	notify   chan struct{} // cap 1: a pending wake-up for the consumer
	frameCap int

	mu      sync.Mutex // guards the following
	buf     []byte     // len(lens) slots of frameCap bytes
	lens    []int      // bytes used in each slot
	head    int        // slot of the oldest frame
	n       int        // frames queued
	dropped uint64
}

// NewFrames returns a ring of slots frames of at most frameCap bytes each, all allocated
// now (slots·frameCap bytes). It panics unless both are positive. Choose frameCap as a
// whole number of samples, for example one 20 ms frame.
func NewFrames(slots, frameCap int) *Frames {
	if slots <= 0 || frameCap <= 0 {
		panic("ring: NewFrames needs positive slots and frameCap")
	}
	return &Frames{
		notify:   make(chan struct{}, 1),
		frameCap: frameCap,
		buf:      make([]byte, slots*frameCap),
		lens:     make([]int, slots),
	}
}

// Slots is the number of frames the ring holds.
func (f *Frames) Slots() int { return len(f.lens) }

// FrameCap is the most bytes one slot holds.
func (f *Frames) FrameCap() int { return f.frameCap }

// Push copies b into the ring as the newest frame, splitting it into pieces of at most
// FrameCap bytes, and reports whether older frames were dropped to make room. An empty b
// is ignored. Push never blocks: afterwards it signals Notify without waiting.
func (f *Frames) Push(b []byte) (dropped bool) {
	if len(b) == 0 {
		return false
	}
	f.mu.Lock()
	for len(b) > 0 {
		piece := b[:min(len(b), f.frameCap)]
		b = b[len(piece):]
		if f.n == len(f.lens) {
			f.head = (f.head + 1) % len(f.lens)
			f.n--
			f.dropped++
			dropped = true
		}
		slot := (f.head + f.n) % len(f.lens)
		f.lens[slot] = copy(f.buf[slot*f.frameCap:(slot+1)*f.frameCap], piece)
		f.n++
	}
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default: // a wake-up is already pending
	}
	return dropped
}

// Pop removes the oldest frame and appends it to dst[:0], returning it and true; with
// cap(dst) >= FrameCap it never allocates. On an empty ring it returns dst[:0] and false.
func (f *Frames) Pop(dst []byte) ([]byte, bool) {
	dst = dst[:0]
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		return dst, false
	}
	slot := f.head
	dst = append(dst, f.buf[slot*f.frameCap:slot*f.frameCap+f.lens[slot]]...)
	f.head = (f.head + 1) % len(f.lens)
	f.n--
	return dst, true
}

// Len is the number of frames queued now.
func (f *Frames) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// Dropped is how many frames (slots) have been dropped to make room since NewFrames.
// Reset does not clear it.
func (f *Frames) Dropped() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped
}

// Notify returns a channel with a buffer of one that receives after Push whenever no
// wake-up is already pending. A consumer selects on it, then Pops until the ring is empty:
// one wake-up may stand for many frames.
func (f *Frames) Notify() <-chan struct{} { return f.notify }

// Reset discards every queued frame without counting them as dropped.
func (f *Frames) Reset() {
	f.mu.Lock()
	f.head, f.n = 0, 0
	f.mu.Unlock()
}
