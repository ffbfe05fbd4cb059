package media

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/handset-voice/handset/internal/audio"
)

// frameOf is a 20 ms PCMU frame whose every byte is v: frames are told apart by value.
func frameOf(v byte) []byte { return bytes.Repeat([]byte{v}, 160) }

// popAll pops n frames and returns their first bytes (0xFF for silence).
func popAll(t *testing.T, b *jitterBuffer, n int) []byte {
	t.Helper()
	out := make([]byte, 0, n)
	dst := make([]byte, 160)
	for range n {
		if !b.pop(dst) {
			t.Fatal("pop found no stream")
		}
		for _, v := range dst[1:] {
			if v != dst[0] {
				t.Fatalf("a popped frame mixes values: %v", dst)
			}
		}
		out = append(out, dst[0])
	}
	return out
}

func TestJitterInOrderPlaysEveryFrameAfterOneFrameOfCushion(t *testing.T) {
	b := newJitterBuffer(PCMU)
	dst := make([]byte, 160)
	if b.pop(dst) {
		t.Fatal("a buffer without packets played a frame")
	}
	var got []byte
	for i := range 5 {
		b.push(uint32(1000+160*i), frameOf(byte(i+1)), true, int64(160*i))
		got = append(got, popAll(t, b, 1)...)
	}
	got = append(got, popAll(t, b, 1)...)
	want := []byte{0xFF, 1, 2, 3, 4, 5}
	if !bytes.Equal(got, want) {
		t.Fatalf("played %v, want %v", got, want)
	}
	if b.concealed != 0 || b.late != 0 {
		t.Fatalf("concealed %d late %d, want none", b.concealed, b.late)
	}
}

func TestJitterReordersByTimestamp(t *testing.T) {
	b := newJitterBuffer(PCMU)
	b.push(0, frameOf(1), true, 0)
	b.push(320, frameOf(3), true, 320)
	b.push(160, frameOf(2), false, 330)
	b.push(480, frameOf(4), true, 480)
	if got, want := popAll(t, b, 5), []byte{0xFF, 1, 2, 3, 4}; !bytes.Equal(got, want) {
		t.Fatalf("played %v, want %v", got, want)
	}
}

func TestJitterConcealsALostFrameWithSilence(t *testing.T) {
	b := newJitterBuffer(PCMU)
	b.push(0, frameOf(1), true, 0)
	b.push(320, frameOf(3), true, 320)
	if got, want := popAll(t, b, 4), []byte{0xFF, 1, 0xFF, 3}; !bytes.Equal(got, want) {
		t.Fatalf("played %v, want %v", got, want)
	}
	if b.concealed != 1 {
		t.Fatalf("concealed %d frames, want 1", b.concealed)
	}
}

func TestJitterRecutsOtherPacketTimes(t *testing.T) {
	for _, ms := range []int{10, 30, 60} {
		b := newJitterBuffer(PCMU)
		n := ms * 8
		var sent []byte
		for i := range 240 / ms { // 240 ms: whole frames for every ptime
			p := make([]byte, n)
			for j := range p {
				p[j] = byte((i*n + j) % 200)
			}
			sent = append(sent, p...)
			b.push(uint32(5000+i*n), p, true, int64(i*n))
		}
		var got []byte
		dst := make([]byte, 160)
		b.pop(dst) // the cushion
		for range 12 {
			b.pop(dst)
			got = append(got, dst...)
		}
		if !bytes.Equal(got, sent) {
			t.Errorf("%d ms packets: re-cut audio differs from what was sent", ms)
		}
	}
}

func TestJitterDropsLatePacketsAndGrowsItsCushion(t *testing.T) {
	b := newJitterBuffer(PCMU)
	b.push(0, frameOf(1), true, 0)
	popAll(t, b, 3) // cushion, frame 1, and frame 2 (missing) played as silence
	if r := b.push(160, frameOf(2), false, 500); r != pushLate {
		t.Fatalf("a packet after its play time: result %d, want late", r)
	}
	if b.late != 1 || b.depth != 2 {
		t.Fatalf("late %d depth %d, want 1 and 2", b.late, b.depth)
	}
	b.push(320, frameOf(3), true, 520)
	// The grown cushion holds the playhead one pop: silence, then frame 3 plays.
	if got, want := popAll(t, b, 2), []byte{0xFF, 3}; !bytes.Equal(got, want) {
		t.Fatalf("played %v, want %v", got, want)
	}
}

func TestJitterRestartsOnTimestampJumps(t *testing.T) {
	for name, jump := range map[string]int32{"forward": 8000 * 10, "backward": -8000 * 10} {
		b := newJitterBuffer(PCMU)
		b.push(1<<20, frameOf(1), true, 0)
		popAll(t, b, 2)
		if r := b.push(uint32(1<<20+160+jump), frameOf(2), true, 160); r != pushRestarted {
			t.Fatalf("%s: a newest packet 10 s off: result %d, want restarted", name, r)
		}
		b.push(uint32(1<<20+320+jump), frameOf(3), true, 320)
		if got, want := popAll(t, b, 3), []byte{0xFF, 2, 3}; !bytes.Equal(got, want) {
			t.Fatalf("%s: played %v, want %v", name, got, want)
		}
		if b.restarts != 1 {
			t.Fatalf("%s: restarts %d, want 1", name, b.restarts)
		}
	}
}

// When the playout falls far behind the peer (the send clock re-anchored after a stall,
// or a sender bursts), packets land beyond the buffer's window. The buffer must start
// again from them once, and play them: not place each one after the last, beyond the
// window again, restarting on every packet and playing silence for as long as the two
// clocks keep pace (seen at 500 calls: thousands of restarts, 20 s of silence).
func TestJitterCatchesUpWhenThePlayoutFallsBehind(t *testing.T) {
	for _, ahead := range []int{jitterSlots - 1, jitterSlots, jitterSlots + 1, jitterSlots + 5, 3 * jitterSlots} {
		b := newJitterBuffer(PCMU)
		dst := make([]byte, 160)
		seq := 0
		next := func() byte {
			v := byte(seq%200 + 1)
			b.push(uint32(160*seq), frameOf(v), true, int64(160*seq))
			seq++
			return v
		}
		next()
		b.pop(dst)
		for range ahead { // the playout stalls while the peer goes on
			next()
		}
		var played, want []byte
		for range 100 { // then both keep pace (a hundred frames' values are unique)
			want = append(want, next())
			played = append(played, popAll(t, b, 1)...)
		}
		if most := ahead/jitterSlots + 1; int(b.restarts) > most { // once per window's worth of burst
			t.Errorf("%d frames ahead: %d restarts, want at most %d", ahead, b.restarts, most)
		}
		// Once caught up it plays the peer's audio frame after frame, at most a window
		// behind the newest: no silence, nothing skipped.
		tail := played[50:]
		lag := bytes.Index(want, tail[:1])
		if lag < 0 || len(want)-len(tail)-lag > jitterSlots || !bytes.Equal(tail, want[lag:lag+len(tail)]) {
			t.Errorf("%d frames ahead: once caught up it played %v of %v", ahead, tail, want)
		}
	}
}

func TestJitterTimestampWraparound(t *testing.T) {
	b := newJitterBuffer(PCMU)
	start := uint32(0xFFFFFFFF - 200)
	for i := range 4 {
		b.push(start+uint32(160*i), frameOf(byte(i+1)), true, int64(160*i))
	}
	if got, want := popAll(t, b, 5), []byte{0xFF, 1, 2, 3, 4}; !bytes.Equal(got, want) {
		t.Fatalf("played %v across the 32-bit wrap, want %v", got, want)
	}
}

// steady feeds n frames one per pop with arrival noise jitter (in samples) on odd frames.
func steady(b *jitterBuffer, from, n int, noise int64) {
	dst := make([]byte, 160)
	for i := from; i < from+n; i++ {
		arrival := int64(160 * i)
		if i%2 == 1 {
			arrival += noise
		}
		b.push(uint32(160*i), frameOf(1), true, arrival)
		b.pop(dst)
	}
}

func TestJitterDepthFollowsTheMeasuredJitter(t *testing.T) {
	b := newJitterBuffer(PCMU)
	steady(b, 0, 200, 240) // 30 ms of arrival noise every other packet
	if b.depth < 4 {
		t.Fatalf("depth %d frames after 4 s of 30 ms jitter (estimate %.0f samples), want >= 4", b.depth, b.jitter)
	}
	grown := b.depth
	// A calm network: the cushion comes back down. Feeding more than one frame per pop
	// is not needed: the held-back frames leave a surplus the shrink rule sees.
	steady(b, 200, 1000, 0)
	if b.depth >= grown || b.depth > 2 {
		t.Fatalf("depth %d after 20 s without jitter (was %d), want <= 2", b.depth, grown)
	}
}

func TestJitterRefusesPayloadsItCannotPlace(t *testing.T) {
	b := newJitterBuffer(Codec{PayloadType: 96, Format: PCMU.Format})
	if b.check(nil) == nil || b.check(make([]byte, 8*160+1)) == nil {
		t.Fatal("an empty or over-long payload passed the check")
	}
	l16 := newJitterBuffer(Codec{PayloadType: 96, Format: audio.Format{Encoding: audio.PCM16, Rate: 16000}})
	if l16.check(make([]byte, 3)) == nil {
		t.Fatal("half a 16-bit sample passed the check")
	}
}

func TestJitterPushAndPopAllocateNothing(t *testing.T) {
	b := newJitterBuffer(PCMU)
	frame, dst := frameOf(1), make([]byte, 160)
	var i uint32
	allocs, counted := poolAllocs(1000, func() {
		b.push(160*i, frame, true, int64(160*i))
		b.pop(dst)
		i++
	})
	if counted && allocs != 0 {
		t.Fatalf("push and pop allocate %.1f times per frame, want 0", allocs)
	}
}

// heldFrames counts the slots holding a frame.
func heldFrames(b *jitterBuffer) int {
	n := 0
	for _, s := range b.slots {
		if s.frame != nil {
			n++
		}
	}
	return n
}

// A slot holds a frame only while audio for it is buffered: the cushion, not the window.
func TestJitterHoldsFramesOnlyForBufferedAudio(t *testing.T) {
	b := newJitterBuffer(PCMU)
	dst := make([]byte, 160)
	for i := range 100 {
		b.push(uint32(160*i), frameOf(1), true, int64(160*i))
		if held := heldFrames(b); held > b.depth+1 {
			t.Fatalf("packet %d: %d frames held with a cushion of %d", i, held, b.depth)
		}
		b.pop(dst)
	}
	if b.concealed != 0 {
		t.Fatalf("%d frames concealed", b.concealed)
	}
	// A burst fills the window; popping it empties the slots again.
	before := heldFrames(b)
	for i := 100; i < 110; i++ {
		b.push(uint32(160*i), frameOf(2), true, int64(160*100))
	}
	if held := heldFrames(b); held != before+10 {
		t.Fatalf("%d frames held after a burst of 10 (%d before)", held, before)
	}
	popAll(t, b, 12)
	if held := heldFrames(b); held != 0 {
		t.Fatalf("%d frames held once everything played", held)
	}
	b.push(uint32(160*500), frameOf(3), true, 0) // a jump: the stream starts again
	b.push(uint32(160*501), frameOf(3), true, 0)
	b.configure(PCMA)
	if held := heldFrames(b); held != 0 {
		t.Fatalf("%d frames held after a codec change", held)
	}
}

// simulate plays a 20 ms stream through a jitter buffer on simulated time: packet i is
// sent at i·20 ms and arrives delay(i) later (µs); pops happen every 20 ms, 7 ms out of
// phase with the sender. It returns the buffer and how many packets after warm-up
// (the first second) arrived too late to play.
func simulate(packets int, delay func(i int) int64) (*jitterBuffer, int) {
	b := newJitterBuffer(PCMU)
	type arrival struct {
		at int64 // µs
		i  int
	}
	arrivals := make([]arrival, packets)
	for i := range arrivals {
		arrivals[i] = arrival{at: int64(i)*20000 + delay(i), i: i}
	}
	slices.SortFunc(arrivals, func(x, y arrival) int { return int(x.at - y.at) })
	dst := make([]byte, 160)
	late, next := 0, 0
	for pop := int64(7000); next < len(arrivals); pop += 20000 {
		for ; next < len(arrivals) && arrivals[next].at <= pop; next++ {
			a := arrivals[next]
			newest := true
			for _, earlier := range arrivals[:next] {
				if earlier.i > a.i {
					newest = false
					break
				}
			}
			if b.push(uint32(160*a.i), frameOf(1), newest, a.at*8/1000) == pushLate && a.i >= 50 {
				late++
			}
		}
		b.pop(dst)
	}
	return b, late
}

func TestJitterKeepsUpWithARealisticNetwork(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Delays of 5-45 ms: 40 ms of spread, reordering included.
	b, late := simulate(1500, func(int) int64 { return 5000 + rng.Int64N(40000) })
	t.Logf("40 ms spread: depth %d frames, jitter estimate %s, late after warm-up %d of 1450",
		b.depth, b.jitterDuration(8000), late)
	if late > 1450/50 { // 2%
		t.Fatalf("%d of 1450 packets were late: the cushion did not grow enough", late)
	}
	calm, lateCalm := simulate(1500, func(int) int64 { return 5000 })
	if calm.depth != minDepth || lateCalm != 0 {
		t.Fatalf("a network without jitter: depth %d, %d late; want %d and 0", calm.depth, lateCalm, minDepth)
	}
}
