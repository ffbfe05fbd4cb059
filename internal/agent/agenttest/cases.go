package agenttest

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
	"github.com/handset-voice/handset/internal/voice/voicetest"
)

// question is what the caller says in most cases.
const question = "What time do you open tomorrow?"

// testReply: a turn gets a reply with words, ended by io.EOF, and Next after the end
// keeps saying so.
func testReply(t *testing.T, p Peer) {
	rs := reply(testContext(t), t, p.Agent, turn("conformance-reply", question))
	g := readUntil(t, rs, patience, nil)
	if g.err != nil {
		t.Fatalf("reply ended with %v after %q", g.err, g.text())
	}
	if strings.TrimSpace(g.text()) == "" {
		t.Error("the reply has no words")
	}
	if again := readUntil(t, rs, prompt, nil); again.err != nil || len(again.texts) > 0 {
		t.Errorf("Next after the end: %q and %v, want io.EOF alone", again.texts, again.err)
	}
}

// testStreaming: a long reply comes in pieces, the first long before the last.
func testStreaming(t *testing.T, p Peer) {
	if p.LongText == "" {
		t.Skip("the agent has no long reply to stream (Peer.LongText is empty)")
	}
	g := readUntil(t, reply(testContext(t), t, p.Agent, turn("conformance-stream", p.LongText)), patience, nil)
	if g.err != nil {
		t.Fatalf("reply ended with %v", g.err)
	}
	if len(g.texts) < 2 {
		t.Fatalf("the reply came in %d piece(s): %q", len(g.texts), g.texts)
	}
	if g.first > g.took/2 {
		t.Errorf("first text after %v of %v: the reply was not handed over as it was made", g.first, g.took)
	}
}

// carried is a later turn of a call: a conversation so far, a greeting the runtime
// has not seen, and the caller's new question.
var carried = voice.TurnRequest{
	CallID: "conformance-carried", Turn: 2, CallerHash: "conformance-caller",
	History: []voice.Message{
		{Role: voice.RoleUser, Content: "My name is Ada and I would like a table."},
		{Role: voice.RoleAssistant, Content: "Hello Ada, for how many people?"},
		{Role: voice.RoleUser, Content: "For two, at seven tonight."},
	},
	Unseen: []voice.Message{{Role: voice.RoleAssistant, Content: "Thanks for holding, I am still here."}},
}

// testTurnCarried: the runtime gets the turn as its protocol says: the whole history in
// order, or, for one that keeps the conversation, the caller's new words after a note of
// what it missed, and none of what it already holds.
func testTurnCarried(t *testing.T, p Peer) {
	if p.Sent == nil {
		t.Skip("the agent has no runtime to send a turn to (Peer.Sent is nil)")
	}
	if g := readUntil(t, reply(testContext(t), t, p.Agent, carried), patience, nil); g.err != nil {
		t.Fatalf("reply ended with %v", g.err)
	}
	sent := p.Sent(t).Messages
	if len(sent) == 0 {
		t.Fatal("the runtime was sent no messages")
	}
	if !p.KeepsConversation {
		want := carried.History
		if len(sent) < len(want) {
			t.Fatalf("the runtime was sent %d messages, want the %d of the history: %q", len(sent), len(want), sent)
		}
		for i, m := range sent[len(sent)-len(want):] {
			if m != want[i] {
				t.Errorf("message %d of the history reached the runtime as %+v, want %+v", i, m, want[i])
			}
		}
		return
	}
	last := sent[len(sent)-1]
	if last.Role != voice.RoleUser || !strings.Contains(last.Content, carried.History[2].Content) ||
		!strings.Contains(last.Content, carried.Unseen[0].Content) {
		t.Errorf("the runtime's last message is %+v, want the caller's words after what it missed", last)
	}
	for _, m := range sent {
		if strings.Contains(m.Content, carried.History[0].Content) {
			t.Errorf("the history the runtime already holds was sent again: %+v", m)
		}
	}
}

// testSessions: the turns of one call reach the runtime as one session, another call's
// as another.
func testSessions(t *testing.T, p Peer) {
	if p.Sent == nil || !p.Sessions {
		t.Skip("the runtime is not told which call a turn belongs to (Peer.Sessions is false)")
	}
	session := func(call voice.CallID, n int) string {
		req := turn(call, question)
		req.Turn = n
		if g := readUntil(t, reply(testContext(t), t, p.Agent, req), patience, nil); g.err != nil {
			t.Fatalf("reply ended with %v", g.err)
		}
		return p.Sent(t).Session
	}
	a1, a2, b := session("conformance-a", 1), session("conformance-a", 2), session("conformance-b", 1)
	if a1 == "" || a1 != a2 {
		t.Errorf("two turns of one call reached the runtime as sessions %q and %q", a1, a2)
	}
	if b == a1 {
		t.Errorf("two calls share the session %q", b)
	}
}

// testCancel: cancelling the turn's context mid-reply ends the stream at once, as
// cancelled, and the runtime is told where its protocol allows.
func testCancel(t *testing.T, p Peer) {
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	rs := reply(ctx, t, p.Agent, turn("conformance-cancel", longOr(p)))
	if g := readUntil(t, rs, patience, someText); g.err != nil {
		t.Fatalf("no text before the cancel: %v", g.err)
	}
	cancel()
	g := readUntil(t, rs, prompt, nil)
	if g.err == nil && p.LongText != "" {
		t.Errorf("a cancelled reply ran to its end (%d more pieces)", len(g.texts))
	}
	if g.err != nil {
		voicetest.WantKind(t, "Next after the cancel", g.err, voice.KindCanceled)
	}
	if err := voicetest.CloseWithin(t, rs, prompt); err != nil {
		t.Errorf("Close after the cancel: %v", err)
	}
	told(t, p)
}

// testCloseMidReply: closing a reply midway (the engine's deferred Close, after it
// stopped reading) returns at once, a second Close is harmless, and the runtime is told
// where its protocol allows. Next after Close is not the engine's to call, so not tested.
func testCloseMidReply(t *testing.T, p Peer) {
	rs := reply(testContext(t), t, p.Agent, turn("conformance-close", longOr(p)))
	if g := readUntil(t, rs, patience, someText); g.err != nil {
		t.Fatalf("no text before Close: %v", g.err)
	}
	if err := voicetest.CloseWithin(t, rs, prompt); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := voicetest.CloseWithin(t, rs, prompt); err != nil {
		t.Errorf("second Close: %v", err)
	}
	told(t, p)
}

// longOr is the caller's words for a reply that lasts: the long one where there is one.
func longOr(p Peer) string {
	if p.LongText != "" {
		return p.LongText
	}
	return question
}

// told waits for the runtime to hear that one turn was cancelled, where it can.
func told(t *testing.T, p Peer) {
	t.Helper()
	if p.Aborted == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := p.Aborted(ctx, 1); err != nil {
		t.Errorf("the runtime was not told the turn was cancelled: %v", err)
	}
}

// testCloseIdempotent: Close after a whole reply returns nil, twice.
func testCloseIdempotent(t *testing.T, p Peer) {
	rs := reply(testContext(t), t, p.Agent, turn("conformance-idempotent", question))
	readUntil(t, rs, patience, nil)
	for i := range 2 {
		if err := voicetest.CloseWithin(t, rs, prompt); err != nil {
			t.Errorf("Close %d: %v, want nil", i+1, err)
		}
	}
}

// failing checks a turn that cannot work: Reply, or Next before any text, returns a
// classified error.
func failing(t *testing.T, a voice.Agent, text string, kinds ...voice.ErrorKind) {
	t.Helper()
	rs, err := a.Reply(testContext(t), turn("conformance-failing", text))
	if err != nil {
		voicetest.WantKind(t, "Reply", err, kinds...)
		return
	}
	t.Cleanup(func() { _ = rs.Close() })
	g := readUntil(t, rs, patience, nil)
	if g.err == nil {
		t.Fatalf("the reply %q ended as if complete, want a failure of kind %v", g.text(), kinds)
	}
	voicetest.WantKind(t, "Next", g.err, kinds...)
}

func testWrongKey(t *testing.T, p Peer) {
	if p.WrongKey == nil {
		t.Skip("the runtime takes no credentials (Peer.WrongKey is nil)")
	}
	failing(t, p.WrongKey(t), question, voice.KindAuth)
}

func testUnreachable(t *testing.T, p Peer) {
	if p.Unreachable == nil {
		t.Skip("the agent has no runtime to miss (Peer.Unreachable is nil)")
	}
	failing(t, p.Unreachable(t, testpeer.NowhereURL(t)), question, voice.KindTransient)
}

func testServerError(t *testing.T, p Peer) {
	if p.ServerErrorText == "" {
		t.Skip("the runtime cannot fail a turn (Peer.ServerErrorText is empty)")
	}
	failing(t, p.Agent, p.ServerErrorText, voice.KindTransient)
}

func testTimeout(t *testing.T, p Peer) {
	if p.StallText == "" {
		t.Skip("the runtime cannot stall (Peer.StallText is empty)")
	}
	failing(t, p.Agent, p.StallText, voice.KindTimeout)
}

// testMalformed: a reply stream that breaks off or cannot be read ends in an error,
// never io.EOF: the engine must not take half a reply for a whole one.
func testMalformed(t *testing.T, p Peer) {
	if p.MalformedText == "" {
		t.Skip("the runtime cannot break its stream (Peer.MalformedText is empty)")
	}
	failing(t, p.Agent, p.MalformedText, voice.KindProtocol, voice.KindTransient)
}

// testNoGoroutineLeft: once a reply is read to its end, or cancelled, and closed, nothing
// of it runs. What the agent keeps for every turn (a gateway connection, an HTTP client's
// pool, and the peer's end of them) is made by a first turn before the count starts; a
// new pooled HTTP connection may still come, and belongs to the client (the runtime's
// TestMain checks all of it when its peers are gone).
func testNoGoroutineLeft(t *testing.T, p Peer) {
	warm := reply(testContext(t), t, p.Agent, turn("conformance-leak-warm", question))
	readUntil(t, warm, patience, nil)
	voicetest.CloseWithin(t, warm, prompt)
	before := goleak.IgnoreCurrent()
	whole := reply(testContext(t), t, p.Agent, turn("conformance-leak", question))
	readUntil(t, whole, patience, nil)
	voicetest.CloseWithin(t, whole, prompt)
	ctx, cancel := context.WithCancel(testContext(t))
	cut := reply(ctx, t, p.Agent, turn("conformance-leak-cut", longOr(p)))
	readUntil(t, cut, patience, someText)
	cancel()
	readUntil(t, cut, prompt, nil)
	voicetest.CloseWithin(t, cut, prompt)
	told(t, p)
	voicetest.NoneLeft(t, before)
}
