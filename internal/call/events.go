package call

import (
	"time"

	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/voice"
)

// Events other goroutines post to a call's owner loop. Each is a plain value.
type (
	legEnded       struct{ err error }
	markEchoed     struct{ name string }
	dtmfPressed    struct{ digit string }
	frameMalformed struct{ err error }
	audioOnWire    struct {
		turn  int
		start audioStart
	}
	agentFirstToken struct{ turn int }
	agentProgress   struct {
		turn  int
		label string
	}
	agentDone struct {
		turn  int
		text  string
		usage voice.Usage // what the runtime reported, if anything
	}
	agentFailed struct {
		turn    int
		err     error
		partial string
	}
	ttsRequested struct {
		turn int
		text string
		kind sentenceKind
	}
	ttsFirstByte struct {
		turn int
		mark string
	}
	ttsFailed struct {
		turn int
		name string // the voice
		err  error
	}
	ttsFallbackUsed struct {
		turn int
		name string
	}
	ttsLost struct { // no voice could speak it
		turn int
		text string
		kind sentenceKind
	}
	ttsDead       struct{ turn int } // not even the error message could be spoken
	segmentQueued struct {
		turn       int
		mark, text string
		kind       sentenceKind
		cut        bool          // the voice failed partway: its audio is no words of the reply
		dur        time.Duration // length of its audio
	}
	speechQueued struct{ turn int }
	timerFired   struct {
		id  turn.TimerID
		gen uint32
	}
	goPanicked struct {
		where string
		value any
	}
	transferring     struct{ on bool }
	endRequested     struct{ reason voice.EndReason }
	goodbyeRequested struct{ text string }
)
