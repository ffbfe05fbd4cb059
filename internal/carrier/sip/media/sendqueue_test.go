package media

import (
	"bytes"
	"slices"
	"testing"
)

func TestQueueCutsFramesAndPadsTheLastOne(t *testing.T) {
	q := newSendQueue(1000)
	audio := make([]byte, 400)
	for i := range audio {
		audio[i] = byte(i)
	}
	if !q.push(audio) {
		t.Fatal("push refused 400 bytes into 1000")
	}
	dst := make([]byte, 160)
	var got []byte
	for range 3 {
		if !q.frame(dst, 0xFF) {
			t.Fatal("a frame with audio queued took none")
		}
		got = append(got, dst...)
	}
	if !bytes.Equal(got[:400], audio) || !bytes.Equal(got[400:], bytes.Repeat([]byte{0xFF}, 80)) {
		t.Fatal("frames differ from the queued audio padded with silence")
	}
	if q.frame(dst, 0xFF) || !bytes.Equal(dst, bytes.Repeat([]byte{0xFF}, 160)) {
		t.Fatal("an empty queue did not give a silence frame")
	}
}

func TestQueueWrapsAndRefusesOverflow(t *testing.T) {
	q := newSendQueue(320)
	dst := make([]byte, 160)
	for i := range 10 {
		if !q.push(frameOf(byte(i))) {
			t.Fatalf("push %d refused with %d queued", i, q.size)
		}
		q.frame(dst, 0)
		if dst[0] != byte(i) || dst[159] != byte(i) {
			t.Fatalf("frame %d came back as %d", i, dst[0])
		}
	}
	q.push(frameOf(1))
	q.push(frameOf(2))
	if q.push([]byte{3}) {
		t.Fatal("push past the capacity was accepted")
	}
}

func TestQueueMarksFollowTheAudio(t *testing.T) {
	q := newSendQueue(1000)
	dst := make([]byte, 160)
	q.mark("m0") // nothing before it: due at once
	q.push(frameOf(1))
	q.mark("m1")
	q.push(frameOf(2))
	q.mark("m2")
	q.mark("m3")
	if got := q.due(); !slices.Equal(got, []string{"m0"}) {
		t.Fatalf("due before sending: %q", got)
	}
	q.frame(dst, 0)
	if got := q.due(); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("due after one frame: %q", got)
	}
	q.push(frameOf(3))
	q.mark("m4")
	q.drop()
	if got := q.due(); !slices.Equal(got, []string{"m2", "m3", "m4"}) {
		t.Fatalf("due after a clear: %q", got)
	}
	if got := q.due(); len(got) != 0 {
		t.Fatalf("marks reported twice: %q", got)
	}
	// Reported names are not kept: a long call's queue holds only its pending marks.
	for _, m := range q.marks[:cap(q.marks)] {
		if m.name != "" {
			t.Fatalf("a reported mark's name is still held: %q", m.name)
		}
	}
	for _, name := range q.reporting[:cap(q.reporting)] {
		if name != "" {
			t.Fatalf("a reported mark's name is still held for reporting: %q", name)
		}
	}
}

func TestQueueMarkStorageDoesNotGrowWithOnePending(t *testing.T) {
	q := newSendQueue(100000)
	dst := make([]byte, 160)
	q.push(frameOf(0))
	q.mark("first")
	for range 10000 {
		q.push(frameOf(0))
		q.mark("next")
		q.frame(dst, 0)
		q.due()
	}
	if cap(q.marks) > 64 {
		t.Fatalf("mark storage grew to %d with at most two pending", cap(q.marks))
	}
	for range MaxMarks {
		q.mark("x")
	}
	if q.mark("one too many") {
		t.Fatal("more than MaxMarks pending were accepted")
	}
}

// The queue's storage starts small and grows only when audio does not fit, keeping the
// queued audio in order across the wrap, up to the limit and no further.
func TestQueueGrowsInOrderUpToItsLimit(t *testing.T) {
	limit := 16000 // 2 s of 8 kHz G.711
	q := newSendQueue(limit)
	dst := make([]byte, 160)
	for i := range 1000 { // a steady call: about 100 ms queued, popped as it goes
		q.push(frameOf(byte(i)))
		if q.size > 800 {
			q.frame(dst, 0)
		}
	}
	if len(q.buf) != initialQueue {
		t.Fatalf("a steady call's queue holds %d bytes of storage, want %d", len(q.buf), initialQueue)
	}
	want := byte(q.queued/160 - uint64(q.size/160))
	for i := range limit/160 - q.size/160 { // fill to the limit from wherever head is
		if !q.push(frameOf(byte(1000 + i))) {
			t.Fatalf("push %d refused with %d of %d queued", i, q.size, limit)
		}
	}
	if q.push([]byte{0}) {
		t.Fatal("push past the limit was accepted")
	}
	if len(q.buf) != limit {
		t.Fatalf("storage grew to %d, want the limit %d", len(q.buf), limit)
	}
	for i := range limit / 160 {
		q.frame(dst, 0)
		if dst[0] != want || dst[159] != want {
			t.Fatalf("frame %d came back as %d, want %d", i, dst[0], want)
		}
		want++
	}
}

// The queue counts a frame found dry inside a sentence (after a whole frame of audio, with
// no mark queued there) as an underrun, once per gap; a dry queue at a mark, after a clear,
// or after audio that ended mid-frame is the end of something, not an underrun.
func TestQueueCountsUnderrunsInsideASentenceOnly(t *testing.T) {
	q := newSendQueue(2000)
	dst := make([]byte, 160)
	take := func(n int) {
		for range n {
			q.frame(dst, 0xFF)
		}
	}
	q.push(frameOf(1))
	q.push(frameOf(2))
	q.mark("s1")
	take(3) // dry at the sentence's mark
	if q.underruns != 0 {
		t.Fatalf("a queue dry at a mark counted %d underruns", q.underruns)
	}
	q.push(frameOf(3))
	take(3) // dry after audio with no mark: one gap, however many frames it lasts
	if q.underruns != 1 {
		t.Fatalf("a sentence's gap counted %d underruns, want 1", q.underruns)
	}
	q.push(frameOf(4))
	q.drop()
	take(2)
	if q.underruns != 1 {
		t.Fatalf("a clear counted as an underrun (%d)", q.underruns)
	}
	q.push(make([]byte, 240)) // a frame and a half
	take(3)
	if q.underruns != 1 {
		t.Fatalf("audio ending mid-frame counted as an underrun (%d)", q.underruns)
	}
	q.push(frameOf(5))
	q.mark("s2")
	q.push(frameOf(6)) // the next sentence was already queued: no gap at the mark
	take(2)
	q.push(frameOf(7))
	take(1)
	if q.underruns != 1 {
		t.Fatalf("a queue that never ran dry counted %d underruns, want 1", q.underruns)
	}
	take(1)
	if q.underruns != 2 {
		t.Fatalf("the gap after the second sentence's audio counted %d underruns, want 2", q.underruns)
	}
}

// A listening call's queue lets its storage go after a second of silence, and makes it
// again for the next reply; a pause inside a reply keeps it.
func TestQueueLetsItsStorageGoWhileListening(t *testing.T) {
	q := newSendQueue(16000)
	dst := make([]byte, 160)
	if q.buf != nil {
		t.Fatalf("a new queue holds %d bytes of storage before any audio", len(q.buf))
	}
	q.push(frameOf(1))
	q.frame(dst, 0)
	for range releaseAfter - 1 { // a pause just short of a second
		q.frame(dst, 0xFF)
	}
	if len(q.buf) != initialQueue {
		t.Fatalf("storage after a pause inside a reply: %d bytes, want %d", len(q.buf), initialQueue)
	}
	q.push(frameOf(2)) // the reply goes on
	q.push(frameOf(3))
	q.frame(dst, 0)
	if dst[0] != 2 {
		t.Fatalf("after the pause the queue played %d, want 2", dst[0])
	}
	q.frame(dst, 0)
	for range releaseAfter {
		q.frame(dst, 0xFF)
	}
	if q.buf != nil {
		t.Fatalf("a queue empty for a second still holds %d bytes", len(q.buf))
	}
	q.mark("next reply")
	q.push(frameOf(4))
	q.push(frameOf(5))
	for _, want := range []byte{4, 5} {
		if !q.frame(dst, 0) || dst[0] != want || dst[159] != want {
			t.Fatalf("the next reply played %d, want %d", dst[0], want)
		}
	}
	if got := q.due(); !slices.Equal(got, []string{"next reply"}) {
		t.Fatalf("marks after the storage was made again: %q", got)
	}
	if len(q.buf) != initialQueue {
		t.Fatalf("storage made again: %d bytes, want %d", len(q.buf), initialQueue)
	}
	if !q.push(nil) || q.size != 0 {
		t.Fatal("an empty push was refused or queued something")
	}
}
