package call

import "github.com/handset-voice/handset/internal/turn"

// Events other goroutines post to a call's owner loop. Each is a plain value.
type (
	legEnded        struct{ err error }
	markEchoed      struct{ name string }
	dtmfPressed     struct{ digit string }
	frameMalformed  struct{ err error }
	audioOnWire     struct{ turn int }
	agentFirstToken struct{ turn int }
	agentProgress   struct {
		turn  int
		label string
	}
	agentDone struct {
		turn int
		text string
	}
	agentFailed struct {
		turn    int
		err     error
		partial string
	}
	ttsRequested struct {
		turn int
		text string
	}
	ttsFirstByte struct{ turn int }
	ttsFailed    struct {
		turn int
		err  error
	}
	segmentQueued struct {
		turn       int
		mark, text string
	}
	speechQueued struct{ turn int }
	timerFired   struct{ id turn.TimerID }
	goPanicked   struct {
		where string
		value any
	}
)
