// Package echo owns the built-in "echo" agent, which lets anyone try Handset without an
// agent runtime: it answers "You said: <the caller's last words>." (or a short greeting
// when the caller has said nothing yet), streamed word by word with no delay, so the rest
// of the pipeline (sentence chunking, TTS, barge-in) behaves as with a real runtime.
package echo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/handset-voice/handset/internal/voice"
)

// Name is the agent's name, as configured with HANDSET_AGENT=echo.
const Name = "echo"

// Greeting is the reply when the history holds no user message.
const Greeting = "Hello! This is the Handset echo agent. Say something and I will repeat it."

// Agent is the echo agent. The zero value is ready to use; it is safe for concurrent use.
type Agent struct{}

var _ voice.Agent = (*Agent)(nil)

// New returns an echo agent.
func New() *Agent { return &Agent{} }

// Name returns "echo".
func (*Agent) Name() string { return Name }

// Reply returns the echo of the last user message as a stream of words.
func (*Agent) Reply(ctx context.Context, req voice.TurnRequest) (voice.ReplyStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, canceled(ctx)
	}
	return &stream{ctx: ctx, words: words(ReplyText(req.History))}, nil
}

// ReplyText returns what the agent says to history.
func ReplyText(history []voice.Message) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role != voice.RoleUser {
			continue
		}
		said := strings.TrimRight(strings.Join(strings.Fields(history[i].Content), " "), ".!?… ")
		if said == "" {
			break
		}
		return "You said: " + said + "."
	}
	return Greeting
}

// words splits text into chunks of one word each, keeping the space before every word
// after the first, so the chunks join back into text.
func words(text string) []string {
	f := strings.Fields(text)
	for i := 1; i < len(f); i++ {
		f[i] = " " + f[i]
	}
	return f
}

type stream struct {
	ctx    context.Context
	words  []string // owned by the Next goroutine
	closed atomic.Bool
}

// Next returns the next word, io.EOF after the last, or a canceled error once ctx is done
// or the stream closed.
func (s *stream) Next() (voice.ReplyChunk, error) {
	if s.closed.Load() {
		return voice.ReplyChunk{}, &voice.ProviderError{Provider: Name, Op: "reply", Kind: voice.KindCanceled,
			Err: fmt.Errorf("reply stream closed: %w", context.Canceled)}
	}
	if s.ctx.Err() != nil {
		return voice.ReplyChunk{}, canceled(s.ctx)
	}
	if len(s.words) == 0 {
		return voice.ReplyChunk{}, io.EOF
	}
	w := s.words[0]
	s.words = s.words[1:]
	return voice.ReplyChunk{Text: w}, nil
}

// Close ends the stream. Idempotent.
func (s *stream) Close() error {
	s.closed.Store(true)
	return nil
}

// canceled reports a done ctx as a ProviderError: canceled, or timeout for a deadline.
func canceled(ctx context.Context) error {
	kind := voice.KindCanceled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		kind = voice.KindTimeout
	}
	return &voice.ProviderError{Provider: Name, Op: "reply", Kind: kind, Err: ctx.Err()}
}
