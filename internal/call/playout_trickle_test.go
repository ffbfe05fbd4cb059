package call

import "testing"

// Audio that arrives one frame at a time, faster than real time (a streaming TTS), is
// paced like audio queued at once: the queue running empty between frames is not the
// carrier running dry, so the schedule does not restart on every frame.
func TestPlayoutPacesAudioThatTricklesIn(t *testing.T) {
	p, leg, _, _ := startPlayout(t)
	for range 20 {
		p.enqueue(1, frames(1), "")
		waitUntil(t, func() bool { return p.parked.Load() && len(p.wake) == 0 })
	}
	if got := leg.count("audio"); !aheadBy(got, 5) {
		t.Fatalf("20 frames trickled in at one instant: %d sent, want 5 (or 6): the first and 80 ms of lead", got)
	}
}
