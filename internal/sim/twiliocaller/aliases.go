package twiliocaller

import (
	"time"

	"github.com/handset-voice/handset/internal/sim/phone"
)

// The recording and the playback model are carrier-neutral (package phone); these names
// keep the Twilio caller's API as it was.
type (
	EventKind     = phone.EventKind
	Event         = phone.Event
	Ending        = phone.Ending
	Counters      = phone.Counters
	Snapshot      = phone.Snapshot
	Mark          = phone.Mark
	SpeechSegment = phone.SpeechSegment
	EchoOptions   = phone.EchoOptions
)

// Event kinds, as in package phone.
const (
	AudioReceived = phone.AudioReceived
	AudioPlayed   = phone.AudioPlayed
	MarkSent      = phone.MarkSent
	MarkEchoed    = phone.MarkEchoed
	Clear         = phone.Clear
	ProtocolError = phone.ProtocolError
	SayStarted    = phone.SayStarted
	SayFinished   = phone.SayFinished
	DTMFSent      = phone.DTMFSent
	RawSent       = phone.RawSent
	StopSent      = phone.StopSent
	Closed        = phone.Closed
)

// Speech detection over the played audio, as in package phone.
const (
	SpeechThresholdDBFS = phone.SpeechThresholdDBFS
	SpeechGap           = phone.SpeechGap
	DefaultEchoDelay    = phone.DefaultEchoDelay
)

// Twilio error codes the simulator records as ProtocolError events.
const (
	CodeProtocol  = 31924 // a message Twilio does not accept from us: unknown event, wrong streamSid
	CodeMalformed = 31950 // a frame Twilio cannot parse: binary, bad JSON, bad base64, missing field
	CodeOverflow  = 31931 // more than ten minutes of audio buffered; the audio is discarded
)

// ErrEnded is returned by actions on a call whose stream has ended.
var ErrEnded = phone.ErrEnded

// Silence is d of mu-law silence, for building caller scripts with pauses.
func Silence(d time.Duration) []byte { return phone.Silence(d) }
