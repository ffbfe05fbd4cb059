package phone

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func seq(n int, from byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = from + byte(i)
	}
	return b
}

func TestPlaybackPlaysInRealTimeFromArrival(t *testing.T) {
	var p playback
	if !p.addAudio(100*ms, seq(400, 0)) { // 50 ms, arriving at 100 ms
		t.Fatal("addAudio refused")
	}
	p.addMark(100*ms, "a")
	if !p.addAudio(110*ms, seq(80, 0)) { // queued behind: plays 150..160
		t.Fatal("addAudio refused")
	}
	p.addMark(110*ms, "b")

	if got := p.due(149 * ms); len(got) != 2 { // two whole 20 ms pieces by 140 ms
		t.Fatalf("due(149ms) = %d pieces, want 2", len(got))
	}
	got := p.due(150 * ms)
	if len(got) != 2 || got[0].audio == nil || got[0].end != 150*ms || got[1].mark != "a" {
		t.Fatalf("due(150ms) = %+v, want the last 10 ms piece then mark a", got)
	}
	if at, ok := p.next(); !ok || at != 160*ms {
		t.Fatalf("next = %v %t, want 160ms", at, ok)
	}
	got = p.due(160 * ms)
	if len(got) != 2 || got[0].start != 150*ms || got[1].mark != "b" {
		t.Fatalf("due(160ms) = %+v", got)
	}
	if _, ok := p.next(); ok {
		t.Fatal("queue not empty")
	}
	// Audio arriving after the buffer ran dry starts when it arrives.
	p.addAudio(500*ms, seq(8, 0))
	if at, _ := p.next(); at != 501*ms {
		t.Fatalf("late audio due %v, want 501ms", at)
	}
}

func TestPlaybackMarkOnEmptyBufferIsDueAtOnce(t *testing.T) {
	var p playback
	p.addMark(30*ms, "now")
	got := p.due(30 * ms)
	if len(got) != 1 || got[0].mark != "now" {
		t.Fatalf("due = %+v", got)
	}
}

func TestPlaybackClearKeepsOnlyWhatPlayed(t *testing.T) {
	var p playback
	audio := seq(800, 0) // 100 ms from 0
	p.addAudio(0, audio)
	p.addMark(0, "m1")
	p.addAudio(0, seq(160, 0))
	p.addMark(0, "m2")
	played := p.due(30 * ms) // the first 20 ms piece
	heard, marks, dropped := p.clear(30 * ms)
	if len(played) != 1 || len(heard) != 1 {
		t.Fatalf("played %d, heard %d pieces", len(played), len(heard))
	}
	if !bytes.Equal(heard[0].audio, audio[160:240]) || heard[0].start != 20*ms || heard[0].end != 30*ms {
		t.Fatalf("heard %d bytes [%v,%v]", len(heard[0].audio), heard[0].start, heard[0].end)
	}
	if d := cmp.Diff([]string{"m1", "m2"}, marks); d != "" {
		t.Fatalf("marks (-want +got):\n%s", d)
	}
	if want := 800 + 160 - 240; dropped != want {
		t.Fatalf("dropped %d, want %d", dropped, want)
	}
	if p.buffered() != 0 {
		t.Fatal("buffer not empty after clear")
	}
	// New audio after a clear plays from the clear, not from the old end.
	p.addAudio(30*ms, seq(8, 0))
	if at, _ := p.next(); at != 31*ms {
		t.Fatalf("after clear audio due %v, want 31ms", at)
	}
}

func TestPlaybackRefusesMoreThanTenMinutes(t *testing.T) {
	var p playback
	if !p.addAudio(0, make([]byte, audioBytes(maxBuffered))) {
		t.Fatal("exactly ten minutes refused")
	}
	if p.addAudio(0, make([]byte, 8)) {
		t.Fatal("audio beyond ten minutes accepted")
	}
	if p.addAudio(time.Second, make([]byte, 8*1000)) != true {
		t.Fatal("one second more after one second played refused")
	}
}

// BenchmarkPlaybackSteady is the playback buffer at real-time pace: a frame queued and
// played every 20 ms. It must not allocate.
func BenchmarkPlaybackSteady(b *testing.B) {
	var p playback
	frame := seq(160, 1)
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		p.addAudio(now, frame)
		now += 20 * ms
		p.due(now)
	}
}
