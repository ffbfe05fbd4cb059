// Package vad owns voice activity detection: the Detector contract every VAD in Handset
// meets (energy now; Silero and WebRTC behind the same interface later) and Energy, the
// always-available detector that compares each frame's level with an adaptive noise floor.
package vad

import "fmt"

// Event is a transition a Detector reports for one frame.
type Event uint8

// Events. None means the frame changed nothing.
const (
	None Event = iota
	SpeechStart
	SpeechEnd
)

func (e Event) String() string {
	switch e {
	case None:
		return "none"
	case SpeechStart:
		return "speech_start"
	case SpeechEnd:
		return "speech_end"
	}
	return fmt.Sprintf("event(%d)", uint8(e))
}

// Detector finds where speech starts and ends in a stream of mono 16-bit PCM.
//
// Process takes the next frame of samples at SampleRate Hz, normally 20 ms, though any
// length must work; it reports at most one transition per call, and a SpeechStart is
// always followed by a SpeechEnd before the next SpeechStart (or a Reset). Reset returns
// the detector to silence, reporting nothing, so speech still going on must be detected
// afresh; the call engine calls it at each agent turn and tail-grace end. What else it
// forgets is the engine's choice, measured per detector: the energy VAD keeps its noise
// floor, WebRTC resets libfvad fully (its hangover otherwise restarts speech just after a
// Reset), Silero clears its network state. A new stream gets a new detector.
// InSpeech reports whether the last transition was SpeechStart. Implementations are not
// safe for concurrent use: one goroutine (the call owner) drives a detector.
type Detector interface {
	Process(frame []int16) Event
	Reset()
	InSpeech() bool
	SampleRate() int
}
