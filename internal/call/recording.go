package call

import "time"

// Recorder records a call's audio as it crossed the wire (internal/recording implements
// it): the caller's frames as the leg delivers them, the agent's as the playout sends
// them, and the clears that made the carrier drop what it still held. Caller, Agent and
// Cleared run on the per-frame path (the leg's reader, the playout), so they only copy;
// Start and Close run on the owner goroutine at the call's start and end.
type Recorder interface {
	Start(at time.Time)
	Caller(at time.Time, frame []byte)
	Agent(at time.Time, frames []byte)
	Cleared(at time.Time)
	Close(at time.Time) error
}

// closeRecorder finishes the recording once no frame can come any more; a failure has
// already been logged and journaled by the recorder, and never fails the call.
func (c *Call) closeRecorder(now time.Time) {
	if c.deps.Recorder != nil {
		_ = c.deps.Recorder.Close(now)
	}
}
