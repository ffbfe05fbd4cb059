package phone

import (
	"fmt"
	"math"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio/g711"
)

// EventKind says what an Event records.
type EventKind uint8

// Event kinds. "Handset" is the server under test; "the caller" is this simulator.
const (
	AudioReceived EventKind = iota + 1 // Handset sent media: Bytes, Audio
	AudioPlayed                        // a piece of Handset's audio finished playing (or was cut by a clear): Start, End, Bytes, Audio
	MarkSent                           // Handset sent a mark: Name
	MarkEchoed                         // the caller returned a mark: Name, Cleared
	Clear                              // Handset sent clear: Bytes dropped unplayed
	ProtocolError                      // Handset sent something the carrier would reject: Code, Detail
	SayStarted                         // the first frame of an utterance was sent: Bytes (utterance length)
	SayFinished                        // the last frame of an utterance was sent: Bytes
	DTMFSent                           // the caller sent a dtmf event: Name (the digit)
	RawSent                            // SendRaw wrote a frame: Detail (the text)
	StopSent                           // the caller sent stop (hangup); recorded as the write starts
	Closed                             // the stream ended: Code, Detail (close reason), Bytes (audio left unplayed)
	// ReplyEnded is, on an audio-only stream (Info.AudioOnly), speech from Handset
	// followed by ReplyGap of silence: End is the stream time its last speech frame
	// arrived by. It stands in for the reply-end marks such a stream cannot carry.
	ReplyEnded
)

var kindNames = [...]string{
	AudioReceived: "AudioReceived",
	AudioPlayed:   "AudioPlayed",
	MarkSent:      "MarkSent",
	MarkEchoed:    "MarkEchoed",
	Clear:         "Clear",
	ProtocolError: "ProtocolError",
	SayStarted:    "SayStarted",
	SayFinished:   "SayFinished",
	DTMFSent:      "DTMFSent",
	RawSent:       "RawSent",
	StopSent:      "StopSent",
	Closed:        "Closed",
	ReplyEnded:    "ReplyEnded",
}

func (k EventKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is one entry of a call's timeline. Times are relative to the moment the start
// message was sent. Events are immutable once recorded; Audio is shared, do not modify it.
type Event struct {
	Kind       EventKind
	At         time.Duration // when it was recorded
	Start, End time.Duration // AudioPlayed: when the piece played; SayStarted: Start is the stream time of its first byte; ReplyEnded: End
	Bytes      int
	Audio      []byte // AudioReceived, AudioPlayed: 8 kHz mu-law, whatever the wire carried
	Name       string // MarkSent, MarkEchoed: mark name; DTMFSent: the digit
	Cleared    bool   // MarkEchoed: returned by a clear, so its audio did not all play
	Code       int    // ProtocolError: the carrier's error code (Info); Closed: WebSocket close status
	Detail     string // ProtocolError: what was wrong; Closed: close reason; RawSent: the text
}

func (e Event) String() string {
	switch e.Kind {
	case AudioPlayed:
		return fmt.Sprintf("%v %s %d bytes [%v,%v]", e.At, e.Kind, e.Bytes, e.Start, e.End)
	case ReplyEnded:
		return fmt.Sprintf("%v %s speech to %v", e.At, e.Kind, e.End)
	case AudioReceived, Clear, SayStarted, SayFinished:
		return fmt.Sprintf("%v %s %d bytes", e.At, e.Kind, e.Bytes)
	case MarkSent, DTMFSent:
		return fmt.Sprintf("%v %s %q", e.At, e.Kind, e.Name)
	case MarkEchoed:
		return fmt.Sprintf("%v %s %q cleared=%t", e.At, e.Kind, e.Name, e.Cleared)
	case ProtocolError, Closed:
		return fmt.Sprintf("%v %s %d %s", e.At, e.Kind, e.Code, e.Detail)
	}
	return fmt.Sprintf("%v %s", e.At, e.Kind)
}

// Ending says how a call's stream ended.
type Ending struct {
	ByHandset bool                 // Handset closed the socket (not Hangup, the context or a failure)
	Code      websocket.StatusCode // close status sent or received; -1 when none
	Reason    string               // close reason
	Err       error                // nil for a clean end: Hangup, or Handset closing with 1000
	At        time.Duration
}

// Counters are running totals of a call's audio, kept whether or not Options.Lean is set,
// so a load generator can follow a long call without keeping its audio. A frame is one
// media message, whatever its size. In a call without Lean, the received and played
// totals match the AudioReceived and AudioPlayed events.
type Counters struct {
	ReceivedFrames int64 // media messages accepted from Handset (played, queued or refused as overflow)
	ReceivedBytes  int64 // the mu-law bytes they carried
	PlayedFrames   int64 // pieces that finished playing or were cut short by a clear: one per AudioPlayed event
	PlayedBytes    int64 // the mu-law bytes that really played
	SentFrames     int64 // media messages sent to Handset, one per Info.Frame (20 ms unless the wire says otherwise) of the call
}

// Snapshot is a consistent copy of a call's recording at one moment. It shares the
// immutable events with the call, so taking one is cheap.
type Snapshot struct {
	Events   []Event
	Ended    bool
	Ending   Ending   // valid when Ended
	Counters Counters // the audio totals at the same moment
}

// Count is how many events of kind were recorded.
func (s Snapshot) Count(kind EventKind) int {
	n := 0
	for _, e := range s.Events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// Filter returns the events of kind, in order.
func (s Snapshot) Filter(kind EventKind) []Event {
	var out []Event
	for _, e := range s.Events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// PlayedAudio is everything the caller heard, in order, as 8 kHz mu-law: after a clear only
// what really played.
func (s Snapshot) PlayedAudio() []byte { return s.concat(AudioPlayed) }

// ReceivedAudio is every byte of audio Handset sent, played or not.
func (s Snapshot) ReceivedAudio() []byte { return s.concat(AudioReceived) }

func (s Snapshot) concat(kind EventKind) []byte {
	n := 0
	for _, e := range s.Events {
		if e.Kind == kind {
			n += len(e.Audio)
		}
	}
	out := make([]byte, 0, n)
	for _, e := range s.Events {
		if e.Kind == kind {
			out = append(out, e.Audio...)
		}
	}
	return out
}

// Clears is how many clear messages Handset sent.
func (s Snapshot) Clears() int { return s.Count(Clear) }

// ProtocolErrors are the messages the carrier would have rejected; tests expect none.
func (s Snapshot) ProtocolErrors() []Event { return s.Filter(ProtocolError) }

// Mark is one mark Handset sent and what became of it.
type Mark struct {
	Name     string
	Sent     time.Duration // when it arrived from Handset
	Echoed   bool
	EchoedAt time.Duration
	Cleared  bool // returned by a clear: the audio before it did not all play
}

// Marks lists Handset's marks in the order sent, each matched with its echo.
func (s Snapshot) Marks() []Mark {
	var marks []Mark
	for _, e := range s.Events {
		switch e.Kind {
		case MarkSent:
			marks = append(marks, Mark{Name: e.Name, Sent: e.At})
		case MarkEchoed:
			for i := range marks {
				if !marks[i].Echoed && marks[i].Name == e.Name {
					marks[i].Echoed, marks[i].EchoedAt, marks[i].Cleared = true, e.At, e.Cleared
					break
				}
			}
		}
	}
	return marks
}

// Speech detection over the played audio.
const (
	// SpeechThresholdDBFS is the frame level (RMS, 0 dBFS = 32768) above which played audio
	// counts as speech.
	SpeechThresholdDBFS = -45.0
	// SpeechGap is the silence (or absence of audio) that separates two speech segments.
	SpeechGap = 200 * time.Millisecond
)

// speechMeanSquare is the mean square of a frame at SpeechThresholdDBFS.
var speechMeanSquare = math.Pow(10, SpeechThresholdDBFS/10) * 32768 * 32768

// SpeechSegment is a run of played non-silent audio, from the start of its first speech
// frame to the end of its last.
type SpeechSegment struct {
	Start, End time.Duration
}

// Duration of the segment.
func (s SpeechSegment) Duration() time.Duration { return s.End - s.Start }

// SpeechSegments splits what the caller heard into runs of speech: each played 20 ms frame
// whose decoded RMS is above SpeechThresholdDBFS is speech, and speech frames less than
// SpeechGap apart belong to the same segment.
func (s Snapshot) SpeechSegments() []SpeechSegment {
	var segs []SpeechSegment
	for _, e := range s.Events {
		if e.Kind != AudioPlayed {
			continue
		}
		for off := 0; off < len(e.Audio); off += pieceBytes {
			frame := e.Audio[off:min(off+pieceBytes, len(e.Audio))]
			if !isSpeech(frame) {
				continue
			}
			start := e.Start + audioDuration(off)
			end := start + audioDuration(len(frame))
			if n := len(segs); n > 0 && start-segs[n-1].End < SpeechGap {
				segs[n-1].End = max(segs[n-1].End, end)
				continue
			}
			segs = append(segs, SpeechSegment{Start: start, End: end})
		}
	}
	return segs
}

// HeardSpeech reports whether any speech segment overlaps [from, to).
func (s Snapshot) HeardSpeech(from, to time.Duration) bool {
	for _, seg := range s.SpeechSegments() {
		if seg.Start < to && seg.End > from {
			return true
		}
	}
	return false
}

func isSpeech(frame []byte) bool {
	if len(frame) == 0 {
		return false
	}
	var sum float64
	for _, b := range frame {
		v := float64(g711.DecodeMulawSample(b))
		sum += v * v
	}
	return sum/float64(len(frame)) > speechMeanSquare
}

// String summarises the recording for failure messages.
func (s Snapshot) String() string {
	played := 0
	for _, e := range s.Events {
		if e.Kind == AudioPlayed {
			played += e.Bytes
		}
	}
	// A lean call keeps no audio events, and a Snapshot built by hand has no counters:
	// the larger figure is the one that saw the audio.
	received := max(int64(len(s.ReceivedAudio())), s.Counters.ReceivedBytes)
	played = max(played, int(s.Counters.PlayedBytes))
	str := fmt.Sprintf("%d events, received %d bytes, played %v, %d marks, %d clears, %d speech segments, %d protocol errors",
		len(s.Events), received, audioDuration(played), s.Count(MarkSent), s.Clears(),
		len(s.SpeechSegments()), s.Count(ProtocolError))
	if s.Ended {
		str += fmt.Sprintf(", ended (code %d %q, by handset %t, err %v)", s.Ending.Code, s.Ending.Reason, s.Ending.ByHandset, s.Ending.Err)
	}
	return str
}
