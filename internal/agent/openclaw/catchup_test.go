package openclaw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/voice"
)

// TestTurnSendsCatchup: the run's message is the caller's latest words after the note of
// what the session missed on the line (the greeting Handset spoke, a sentence whose run
// never finished, a reply cut off), and nothing of the history the session already holds.
func TestTurnSendsCatchup(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
	turn := req("c1", "where is my parcel")
	turn.Unseen = []voice.Message{
		{Role: voice.RoleAssistant, Content: "Hello, you are through to Acme deliveries."},
		{Role: voice.RoleUser, Content: "I ordered a lamp"},
		{Role: voice.RoleAssistant, Content: "Your lamp left our " + voice.InterruptedMarker},
	}
	want := turn.Catchup()
	s, err := e.agent.Reply(turnCtx(context.Background(), "c1", callerNumber), turn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chunks, err := collect(t, s)
	if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText(want) {
		t.Fatalf("reply %q, %v: want the reply to the catch-up message", chunks, err)
	}
	sends := e.fake.Sends()
	if len(sends) != 1 || sends[0].Method != "agent" || sends[0].Message != want {
		t.Fatalf("sends %+v: want one agent run with the message\n%s", sends, want)
	}
	for _, part := range []string{"Acme deliveries", "I ordered a lamp", "Your lamp left our", "where is my parcel"} {
		if !strings.Contains(sends[0].Message, part) {
			t.Errorf("the run's message lacks %q:\n%s", part, sends[0].Message)
		}
	}
	if strings.Contains(sends[0].Message, "an earlier") {
		t.Errorf("the run's message re-sends history the session holds:\n%s", sends[0].Message)
	}
}

// TestEscapedCommandIsSpeech: a caller heard saying "slash reset" reaches the session as
// speech ("(spoken) /reset", as voice.EscapeCommand writes it), so the session is not reset
// and the agent answers the words.
func TestEscapedCommandIsSpeech(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
	ctx := turnCtx(context.Background(), "c1", callerNumber)
	if _, err := reply(t, e, ctx, "c1", "my name is Ada"); err != nil {
		t.Fatal(err)
	}
	spoken := voice.EscapeCommand("/reset")
	chunks, err := reply(t, e, ctx, "c1", spoken)
	if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText(spoken) {
		t.Fatalf("reply %q, %v: want the agent's answer to the words %q", chunks, err, spoken)
	}
	if got := userMessages(e.fake, "agent:main:handset:call:c1"); len(got) != 2 || got[0] != "my name is Ada" || got[1] != spoken {
		t.Errorf("the session holds the caller messages %q; want both turns, the second as speech", got)
	}
}
