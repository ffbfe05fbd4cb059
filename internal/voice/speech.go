package voice

import (
	"context"
	"io"

	"github.com/handset-voice/handset/internal/audio"
)

// Transcript is what a recognizer heard.
type Transcript struct {
	Text string
	// Final means the recognizer considers the utterance complete (its own endpoint, or an
	// answer to Finalize); earlier results for the same utterance were partial.
	Final bool
}

// Recognizer opens streaming speech-to-text sessions. Safe for concurrent use: each call
// opens its own stream.
type Recognizer interface {
	Name() string
	// Stream opens a live stream for audio in format f. Errors are *ProviderError.
	Stream(ctx context.Context, f audio.Format, opts StreamOptions) (RecognizerStream, error)
}

// StreamOptions are per-call facts a recognizer may pass along (never the raw number).
type StreamOptions struct {
	CallID CallID
}

// RecognizerStream is one call's live STT session. Write and Finalize are called from the
// call's owner goroutine and never block on the network; Results is read by the owner.
type RecognizerStream interface {
	// Write queues audio in the stream's format. A full queue drops the oldest audio.
	Write(audio []byte) error
	// Finalize asks the recognizer to finish the current utterance now.
	Finalize() error
	// Results delivers transcripts in order; it is closed when the stream ends.
	Results() <-chan Transcript
	// Close ends the stream gracefully, waits for its goroutines and returns the error that
	// ended it, if any. Idempotent.
	Close() error
}

// Synthesizer turns text into streaming speech. Safe for concurrent use.
type Synthesizer interface {
	Name() string
	// Synthesize starts speaking text and returns the audio in format f as it arrives.
	// The reader returns io.EOF at the end; errors are *ProviderError; closing it (or
	// cancelling ctx) stops the synthesis.
	Synthesize(ctx context.Context, text string, f audio.Format) (io.ReadCloser, error)
}
