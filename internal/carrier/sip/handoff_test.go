package sip

import (
	"testing"
	"time"
)

// nopSink takes frames and does nothing with them.
type nopSink struct{ frames int }

func (s *nopSink) Audio([]byte)    { s.frames++ }
func (s *nopSink) Mark(string)     {}
func (s *nopSink) DTMF(string)     {}
func (s *nopSink) Malformed(error) {}

// The relay every leg's frames pass through allocates nothing, and hands each frame to the
// sink of the moment.
func TestRelayAllocatesNothing(t *testing.T) {
	var r relay
	first, second := &nopSink{}, &nopSink{}
	r.set(first)
	frame := make([]byte, 160)
	if n := testing.AllocsPerRun(100, func() { r.Audio(frame) }); n != 0 {
		t.Errorf("%v allocations per frame", n)
	}
	r.set(second)
	r.Audio(frame)
	if first.frames != 101 || second.frames != 1 {
		t.Errorf("frames %d then %d, want 101 to the first sink and 1 to the second", first.frames, second.frames)
	}
}

// markStuck is a call whose event queue is full: Mark and DTMF wait until released.
type markStuck struct {
	nopSink
	entered chan struct{}
	release chan struct{}
}

func (s *markStuck) Mark(string) { s.entered <- struct{}{}; <-s.release }
func (s *markStuck) DTMF(string) { s.entered <- struct{}{}; <-s.release }

// A mark or digit waiting on a call never holds up its audio: audio comes from the send
// clock's beat, which ticks many calls, and one stuck call must not stop them all.
func TestAStuckMarkDoesNotHoldUpAudio(t *testing.T) {
	var r relay
	sink := &markStuck{entered: make(chan struct{}, 2), release: make(chan struct{})}
	r.set(sink)
	go r.Mark("spoken")
	go r.DTMF("5")
	<-sink.entered
	<-sink.entered
	delivered := make(chan struct{})
	go func() {
		r.Audio(make([]byte, 160))
		close(delivered)
	}()
	select {
	case <-delivered:
		close(sink.release)
	case <-time.After(5 * time.Second):
		close(sink.release)
		t.Fatal("audio waited behind a mark the call could not take")
	}
}
