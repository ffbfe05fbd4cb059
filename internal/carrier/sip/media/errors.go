package media

import "errors"

// Errors a session returns; callers match them with errors.Is.
var (
	// ErrMediaTimeout: the peer sent no RTP for too long (Run wraps it with how long).
	ErrMediaTimeout = errors.New("media: no RTP from the peer")
	// ErrQueueFull: SendAudio would queue more than MaxQueued of audio.
	ErrQueueFull = errors.New("media: send queue full")
	// ErrTooManyMarks: MaxMarks marks are outstanding already.
	ErrTooManyMarks = errors.New("media: too many marks outstanding")
	// ErrNoDTMF: telephone-event was not negotiated, so digits cannot be sent in RTP.
	ErrNoDTMF = errors.New("media: telephone-event not negotiated")
	// ErrClosed: the session was closed.
	ErrClosed = errors.New("media: session closed")
)
