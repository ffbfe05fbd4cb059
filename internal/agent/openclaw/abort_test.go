package openclaw_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/voice"
)

const callerNumber = "+15551234567"

// bargeIn starts a silent tool run on callID's session and cancels it as a barge-in does:
// the turn's context ends, its reader sees the stream end and closes it. It returns once
// the gateway has the chat.abort, before the gateway has answered it.
func bargeIn(t *testing.T, e *env, callID string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := e.agent.Reply(turnCtx(ctx, callID, callerNumber), req(callID, "look up my order TOOLCALL"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cancel()
	_, err = collect(t, s)
	wantKind(t, err, voice.KindCanceled)
	waitFor(t, e, "chat.abort", func(f *fakeopenclaw.Server) bool { return len(f.Aborts()) == 1 })
}

// userMessages returns the caller messages the session's transcript kept.
func userMessages(f *fakeopenclaw.Server, sessionKey string) []string {
	var out []string
	for _, m := range f.Transcript(sessionKey) {
		if m.Role == "user" {
			out = append(out, m.Text)
		}
	}
	return out
}

// TestTurnAfterBargeInFindsTheSessionIdle: the turn that replaces a run the caller barged
// in on is sent once the gateway has answered chat.abort, however late (500 ms here), so
// it reaches an idle session rather than waiting behind the dying run; it runs under its
// own id, and its reply is the caller's. The gateway opens its prompt with the words of
// the aborted run, which the session does not keep.
func TestTurnAfterBargeInFindsTheSessionIdle(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{AbortAnswerDelay: 500 * time.Millisecond}, openclaw.Options{})
	bargeIn(t, e, "c1")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	const words = "never mind, what are your hours"
	chunks, err := reply(t, e, turnCtx(ctx, "c1", callerNumber), "c1", words)
	if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText(words) {
		t.Errorf("the turn after the barge-in got %q, %v; want the reply to %q", chunks, err, words)
	}
	sends := e.fake.Sends()
	if len(sends) != 2 || sends[1].QueuedBehind != "" {
		t.Fatalf("sends %+v: want the second turn sent once the first run was gone", sends)
	}
	var prompt fakeopenclaw.Prompt
	for _, p := range e.fake.Prompts() {
		if p.RunID == sends[1].IdempotencyKey {
			prompt = p
		}
	}
	if prompt.Message != words || len(prompt.Folded) != 1 || prompt.Folded[0] != sends[0].Message {
		t.Errorf("the second run's prompt %+v: want its words after the aborted run's", prompt)
	}
	if got := userMessages(e.fake, "agent:main:handset:call:c1"); len(got) != 1 || got[0] != words {
		t.Errorf("the session kept the caller messages %q; want only %q", got, words)
	}
}

// TestTurnGoesOnWhenAbortIsNeverAnswered: a gateway that acts on chat.abort but never
// answers it holds the next turn for the bound on that wait, no longer.
func TestTurnGoesOnWhenAbortIsNeverAnswered(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{AbortUnanswered: true}, openclaw.Options{})
	begin := time.Now()
	bargeIn(t, e, "c1")
	ctx, cancel := context.WithTimeout(context.Background(), openclaw.AbortTimeout+waitLimit)
	defer cancel()
	chunks, err := reply(t, e, turnCtx(ctx, "c1", callerNumber), "c1", "hello again")
	if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText("hello again") {
		t.Fatalf("the turn after an unanswered abort got %q, %v", chunks, err)
	}
	if waited := time.Since(begin); waited < openclaw.AbortTimeout {
		t.Errorf("the turn went on %v after the abort; want it held for the abort's answer until the bound, %v", waited, openclaw.AbortTimeout)
	}
}

// TestCloseDuringPendingAbort: closing the agent while an abort waits for its answer ends
// that wait (nothing is left running) and the turn waiting behind it, which is not sent.
func TestCloseDuringPendingAbort(t *testing.T) {
	running := goleak.IgnoreCurrent()
	e := setup(t, fakeopenclaw.Options{AbortAnswerDelay: time.Hour}, openclaw.Options{})
	bargeIn(t, e, "c1")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	next := make(chan error, 1)
	go func() {
		_, err := e.agent.Reply(turnCtx(ctx, "c1", callerNumber), req("c1", "are you there"))
		next <- err
	}()
	e.agent.Close()
	select {
	case err := <-next:
		wantKind(t, err, voice.KindCanceled)
	case <-ctx.Done():
		t.Fatal("the turn waiting for the abort was still waiting after Close")
	}
	if n := len(e.fake.Sends()); n != 1 {
		t.Errorf("%d turns reached the gateway, want only the aborted one", n)
	}
	e.stop()
	goleak.VerifyNone(t, running)
}
