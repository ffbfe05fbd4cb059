// Package agenttest is the conformance suite every voice.Agent passes: replies that
// stream, the turn reaching the runtime as its protocol carries it, a reply cancelled or
// closed midway (and the runtime told, where its protocol can), failures classified the
// way the call engine reads them, and no goroutine left behind. Each runtime runs it from
// its own conformance_test.go with Run, pointing the agent at its peer (a fake speaking
// the runtime's wire protocol), or with no peer for an agent that runs in-process.
//
// The suite never sleeps: it reads chunks as they come, and waits for what a peer saw
// through the peer's own notifications, with generous bounds on every wait.
package agenttest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/voice"
	"github.com/handset-voice/handset/internal/voice/voicetest"
)

// Peer is one agent under test and the runtime it talks to.
type Peer struct {
	Agent voice.Agent

	// Sent is what the runtime was given for the latest turn, once it has arrived; nil for
	// an agent with no runtime behind it.
	Sent func(t *testing.T) Sent
	// KeepsConversation: the runtime holds the conversation itself, so a turn sends the
	// caller's new words after a note of what it missed (TurnRequest.Unseen), never the
	// history it already has. Otherwise the history is sent whole.
	KeepsConversation bool
	// Sessions: the runtime is told which call a turn belongs to (Sent.Session).
	Sessions bool

	// LongText is what the caller says to get a long reply streamed over a while; empty
	// when the agent has none, and the streaming case is skipped.
	LongText string
	// Aborted waits until the runtime has been told that n turns were cancelled; nil when
	// its protocol has no way to say so (the case then checks only the stream's end).
	Aborted func(ctx context.Context, n int) error

	// The failures the peer can stage. Empty where it cannot, and the case is skipped.

	// WrongKey is an agent of the same runtime whose credentials the peer refuses.
	WrongKey func(t *testing.T) voice.Agent
	// Unreachable is an agent of the same runtime pointed at root, an http:// root where
	// nothing listens.
	Unreachable func(t *testing.T, root string) voice.Agent
	// ServerErrorText is what the caller says to get a server error (HTTP 5xx).
	ServerErrorText string
	// StallText is what the caller says to get no answer at all: the agent's own silence
	// limit, which the factory sets well under a few seconds, must end the wait.
	StallText string
	// MalformedText is what the caller says to get a reply stream that breaks off or
	// cannot be read.
	MalformedText string
}

// Sent is a turn as the runtime received it, in the suite's words.
type Sent struct {
	// Messages are the conversation messages sent, oldest first, without the agent's own
	// instructions (system prompts).
	Messages []voice.Message
	// Session is what tells the runtime which call the turn belongs to.
	Session string
}

// Run runs the whole suite. newPeer must return a fresh agent (and peer) for each call;
// Run calls it once per subtest. Subtests do not run in parallel.
func Run(t *testing.T, newPeer func(t *testing.T) Peer) {
	tests := []struct {
		name string
		fn   func(t *testing.T, p Peer)
	}{
		{"Reply", testReply},
		{"Streaming", testStreaming},
		{"TurnCarried", testTurnCarried},
		{"Sessions", testSessions},
		{"Cancel", testCancel},
		{"CloseMidReply", testCloseMidReply},
		{"CloseIdempotent", testCloseIdempotent},
		{"Errors/WrongKey", testWrongKey},
		{"Errors/Unreachable", testUnreachable},
		{"Errors/ServerError", testServerError},
		{"Errors/Timeout", testTimeout},
		{"Errors/Malformed", testMalformed},
		{"NoGoroutineLeft", testNoGoroutineLeft},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPeer(t)
			if p.Agent == nil {
				t.Fatal("the factory gave no Agent")
			}
			tc.fn(t, p)
		})
	}
}

// Bounds on waits. Reaching one means the code under test hung, not that it was slow.
const (
	patience = 30 * time.Second // a whole reply, or a failure surfacing
	prompt   = 5 * time.Second  // what must happen at once: a cancel or Close taking hold
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	t.Cleanup(cancel)
	return ctx
}

// turn is a first turn of call in which the caller says text.
func turn(call voice.CallID, text string) voice.TurnRequest {
	return voice.TurnRequest{CallID: call, Turn: 1, CallerHash: "conformance-caller",
		History: []voice.Message{{Role: voice.RoleUser, Content: text}}}
}

// reply starts a turn that must start, closed when the test ends.
func reply(ctx context.Context, t *testing.T, a voice.Agent, req voice.TurnRequest) voice.ReplyStream {
	t.Helper()
	rs, err := a.Reply(ctx, req)
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	if rs == nil {
		t.Fatal("Reply returned neither a stream nor an error")
	}
	t.Cleanup(func() { _ = rs.Close() })
	return rs
}

// got is what a reply stream gave until it ended or stop said enough.
type got struct {
	texts []string      // the chunks with text
	first time.Duration // from the start of reading to the first text
	took  time.Duration // to the end
	err   error         // what ended it: nil for io.EOF
}

func (g got) text() string { return strings.Join(g.texts, "") }

// readUntil calls Next until io.EOF, an error, or stop(g); a stream that does none of
// these within bound fails t.
func readUntil(t *testing.T, rs voice.ReplyStream, bound time.Duration, stop func(got) bool) got {
	t.Helper()
	var g got
	start := time.Now()
	voicetest.Bounded(t, bound, rs, "the reply neither ended nor failed", func() {
		for {
			c, err := rs.Next()
			if c.Text != "" {
				if len(g.texts) == 0 {
					g.first = time.Since(start)
				}
				g.texts = append(g.texts, c.Text)
			}
			if err != nil || (stop != nil && stop(g)) {
				if !errors.Is(err, io.EOF) {
					g.err = err
				}
				g.took = time.Since(start)
				return
			}
		}
	})
	return g
}

// someText stops a read at the first chunk with text.
func someText(g got) bool { return len(g.texts) > 0 }
