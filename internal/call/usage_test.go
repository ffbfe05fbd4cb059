package call

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

// chunksAgent answers every turn with the same chunks.
type chunksAgent struct{ chunks []voice.ReplyChunk }

func (a *chunksAgent) Name() string { return "chunks" }
func (a *chunksAgent) Reply(context.Context, voice.TurnRequest) (voice.ReplyStream, error) {
	return &chunksStream{left: a.chunks}, nil
}

type chunksStream struct{ left []voice.ReplyChunk }

func (s *chunksStream) Next() (voice.ReplyChunk, error) {
	if len(s.left) == 0 {
		return voice.ReplyChunk{}, io.EOF
	}
	c := s.left[0]
	s.left = s.left[1:]
	return c, nil
}
func (s *chunksStream) Close() error { return nil }

// TestAgentDoneCarriesTheRuntimesUsage: the tokens a runtime reports with its reply (the
// latest count it gives) go into the turn's agent.done.
func TestAgentDoneCarriesTheRuntimesUsage(t *testing.T) {
	agent := &chunksAgent{chunks: []voice.ReplyChunk{
		{Text: "We open "},
		{Usage: voice.Usage{OutputTokens: 2}}, // a running count, replaced by the next
		{Text: "at nine."},
		{Usage: voice.Usage{InputTokens: 812, OutputTokens: 5}},
	}}
	_, _, watch, results := startLimitedCall(t, agent, 90*time.Second)
	results <- voice.Transcript{Text: "when do you open", Final: true}
	done := watch.wait(t, "agent.done", func(e obs.Event) bool { return e.Type == obs.AgentDone })
	if done.Text != "We open at nine." || done.InputTokens != 812 || done.OutputTokens != 5 {
		t.Errorf("agent.done %q with %d in, %d out; want the reply with 812 in, 5 out", done.Text, done.InputTokens, done.OutputTokens)
	}
}
