package sip

import "testing"

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
