package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/voice"
)

// The memory-fidelity matrix: one call and one callback, said the same way to every
// runtime, and what each runtime's memory holds afterwards. The scenarios: the greeting
// is known; two sentences said before the answer are both known; after a barge-in the
// next turn knows exactly what the caller heard, and that they cut the reply off; a tool
// turn superseded by a new caller turn is known; a callback's message is known; words that
// look like a command ("/reset") are kept as speech and never run.

// What the caller says, one utterance each, in order: the fake STT transcribes a call's
// n-th utterance as the n-th line. Magic words script the runtimes' fakes: HANG holds a
// run unanswered, LONG SLOW streams a long reply slowly, TOOLCALL starts a tool (Hermes;
// the other fakes have no tools, and HANG holds them).
const (
	firstWords    = "hi, I am calling about my order"
	toolWords     = "look up my order status"
	lineHello     = "hello there"
	lineFirst     = "HANG " + firstWords
	lineSecond    = "the order number is 553"
	lineLong      = "LONG SLOW tell me everything about shipping"
	lineAfterCut  = "sorry, go on"
	lineTool      = "TOOLCALL HANG " + toolWords
	lineAfterTool = "never mind, thanks"
	lineCommand   = "/reset"
)

var memoryLines = []string{lineHello, lineFirst, lineSecond, lineLong, lineAfterCut, lineTool, lineAfterTool, lineCommand}

// callerWords are the words a runtime can be given as the caller's: the lines, and the
// command-like one as speech.
var callerWords = append(append([]string{}, memoryLines...), spokenCommand)

// The turn each line is (the greeting is turn 0).
const (
	turnHello = iota + 1
	turnFirst
	turnSecond
	turnLong
	turnAfterCut
	turnTool
	turnAfterTool
	turnCommand
)

const callbackMessage = "Your order 553 has shipped and arrives on Monday."

// memorySettings make a silent run audible: the filler after 4 s without a reply, when
// the caller who adds a sentence at once has finished it. (A sentence that runs into the
// filler's start is not transcribed until that turn ends, a turn-taking fault of its own
// that this matrix, about memory, keeps out of its way.)
var memorySettings = []string{
	"HANDSET_LONG_TURN_MESSAGE=One moment while I check that for you.", "HANDSET_LONG_TURN_AFTER=4s",
	"HANDSET_AGENT_TIMEOUT=120s",
}

// spokenCommand is the command-like line as every runtime must receive it: marked as
// speech, so that no runtime runs it.
const spokenCommand = "(spoken) " + lineCommand

// turnMessage is one message a runtime's model was given, or one its memory keeps.
type turnMessage struct{ Role, Content string }

// memoryRuntime is a runtime under the matrix: how Handset reaches it, and how to read
// what its model was given and what it keeps.
type memoryRuntime struct {
	settings []string
	// saw returns the messages the runtime's model was given for each turn whose newest
	// caller words were words, in order.
	saw func(words string) [][]turnMessage
	// working reports that the runtime is at work on the turn of words, unanswered.
	working func(words string) bool
	// kept returns the conversation the runtime keeps itself for a call; nil for a
	// runtime that keeps none and is sent the history every turn.
	kept func(t *testing.T, callID, callerHash string) []turnMessage
}

// replies gives every runtime's fake the same reply: fakeopenai's deterministic echo of
// the newest words, twelve sentences long for LONG.
var replies = fakeopenai.New(fakeopenai.Options{})

// memoryReply is what a runtime's model answers to the newest words.
func memoryReply(words string) string {
	return replies.ReplyText([]fakeopenai.Message{{Role: "user", Content: words}})
}

// newestWords are the caller's newest words in what a model was given: of the lines the
// caller says, the one that ends last in the last user message. A session-keeping runtime
// is sent a note of what it missed before them, and a gateway may wrap them in more text.
func newestWords(msgs []turnMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		best, end := "", -1
		for _, line := range callerWords {
			at := strings.LastIndex(msgs[i].Content, line)
			// Of two lines ending together ("/reset" in "(spoken) /reset"), the longer.
			if at >= 0 && (at+len(line) > end || at+len(line) == end && len(line) > len(best)) {
				best, end = line, at+len(line)
			}
		}
		return best
	}
	return ""
}

// memoryCalls are the facts of a runtime's two calls, as the driver saw them.
type memoryCalls struct {
	callerHash        string
	inbound, callback string      // call ids
	events            []obs.Event // the inbound call's journal
	callbackEvents    []obs.Event
	heard             string // what the caller heard of the long reply before cutting in
}

// startMemoryRig starts serve for rt with a fake Twilio whose callee, on a callback,
// listens to the message, says the first line and hangs up once answered.
func startMemoryRig(t *testing.T, rt memoryRuntime) *outRig {
	answer := func(string) faketwilio.Answer { return faketwilio.Answer{Talk: calleeTalk} }
	return startOutbound(t, answer, memoryLines, append(append([]string{}, memorySettings...), rt.settings...)...)
}

// calleeTalk is the callee of a callback: it waits for the message to play, answers and
// waits for the reply.
func calleeTalk(ctx context.Context, c *twiliocaller.Call) error {
	for _, step := range []func() error{
		func() error { return awaitPlayed(ctx, c, "t0-end") },
		func() error { return c.SayAndWait(ctx, speech(1200*time.Millisecond, 91)) },
		func() error { return awaitPlayed(ctx, c, markEnd(1)) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// awaitPlayed waits, off the test goroutine, until mark played.
func awaitPlayed(ctx context.Context, c *twiliocaller.Call, mark string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	err := c.WaitFor(ctx, func(s twiliocaller.Snapshot) bool { return hasPlayedMark(s, mark) || s.Ended })
	if err == nil && !hasPlayedMark(c.Snapshot(), mark) {
		err = fmt.Errorf("the call ended before %s played", mark)
	}
	return err
}

// driveMemoryCalls places the call from a caller who says every line, then has Handset
// deliver a message to them by a callback.
func driveMemoryCalls(t *testing.T, o *outRig, rt memoryRuntime, from string) memoryCalls {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := o.dial(ctx, func(opt *twiliocaller.Options) { opt.From = from })
	say := func(turn int) {
		t.Helper()
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, int64(80+turn))); err != nil {
			t.Fatalf("saying line %d: %v", turn, err)
		}
	}
	const limit = 2 * time.Minute // a safety net on a loaded machine; every wait ends on its event
	waitMarkFor(ctx, t, c, "t0-end", limit)
	say(turnHello)
	waitMarkFor(ctx, t, c, markEnd(turnHello), limit)

	// The caller adds a sentence as soon as Handset has asked the runtime for the first,
	// which is never answered on its own.
	say(turnFirst)
	awaitLiveEvent(ctx, t, o.rig, "the runtime asked for the first sentence", func(e obs.Event) bool {
		return e.Type == obs.AgentRequest && e.Turn == turnFirst
	})
	say(turnSecond)
	waitMarkFor(ctx, t, c, markEnd(turnSecond), limit)

	// The long reply is cut off once two of its marks came back: the filler at most, so
	// at least its first sentence was heard.
	say(turnLong)
	waitMarkFor(ctx, t, c, markSeg(turnLong, 2), limit)
	say(turnAfterCut)
	waitMarkFor(ctx, t, c, markEnd(turnAfterCut), limit)

	// The tool turn: the filler plays while the runtime works; then the caller moves on.
	say(turnTool)
	waitMarkFor(ctx, t, c, markSeg(turnTool, 1), limit)
	awaitCondition(ctx, t, "the runtime working on the tool turn", func() bool { return rt.working(lineTool) })
	say(turnAfterTool)
	waitMarkFor(ctx, t, c, markEnd(turnAfterTool), limit)

	say(turnCommand)
	waitMarkFor(ctx, t, c, markEnd(turnCommand), limit)
	_ = c.Hangup()
	<-c.Done()

	var mc memoryCalls
	mc.events = o.journal()
	for _, e := range mc.events {
		switch {
		case e.Type == obs.CallStart:
			mc.callerHash = e.CallerHash
		case e.Type == obs.BargeIn && e.Turn == turnLong:
			mc.heard = e.Text
		}
	}
	paths, _ := filepath.Glob(filepath.Join(o.dataDir, "calls", "*", "events.jsonl"))
	mc.inbound = filepath.Base(filepath.Dir(paths[0]))

	// The callback: Handset calls the caller back and speaks the message.
	var job apiJob
	if code := o.api("POST", "/api/deliver?wait=5m", map[string]any{"caller_hash": mc.callerHash, "message": callbackMessage}, &job); code != 200 {
		t.Fatalf("deliver: %d %+v\n%s", code, job, o.logs.String())
	}
	var res jobs.CallResult
	if err := json.Unmarshal(job.Result, &res); err != nil || res.Delivered != "spoken" {
		t.Fatalf("the callback: %+v %q (%v); Twilio's record: %+v", res, job.Error, err, o.tw.Calls())
	}
	mc.callback = string(res.CallID)
	if calls := o.tw.Calls(); len(calls) != 1 || len(calls[0].Errors) > 0 {
		t.Fatalf("the callback as Twilio placed it: %+v", calls)
	}
	mc.callbackEvents = journalOf(t, o.rig, mc.callback)
	return mc
}

// awaitLiveEvent waits until the journal of the call in progress (the rig's only call so
// far) holds an event that ok accepts.
func awaitLiveEvent(ctx context.Context, t *testing.T, r *rig, what string, ok func(obs.Event) bool) {
	t.Helper()
	awaitCondition(ctx, t, what, func() bool {
		paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*", "events.jsonl"))
		if len(paths) != 1 {
			return false
		}
		events, _ := obs.ReadFile(paths[0]) // a line being written is read next time
		for _, e := range events {
			if ok(e) {
				return true
			}
		}
		return false
	})
}

// awaitCondition polls cond (a fake's records and a journal file change without a signal
// to wait on) until it holds; two minutes is only a safety net.
func awaitCondition(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkMemory asserts, scenario by scenario, what the runtime's model was given on the turn
// after each event, and what the runtime keeps of the calls when it keeps anything.
func checkMemory(t *testing.T, rt memoryRuntime, mc memoryCalls) {
	var kept, keptCallback []turnMessage
	if rt.kept != nil {
		kept = rt.kept(t, mc.inbound, mc.callerHash)
		keptCallback = rt.kept(t, mc.callback, mc.callerHash)
		t.Logf("the runtime keeps of the call:\n%s", dumpMessages(kept))
	}
	t.Run("greeting", func(t *testing.T) {
		mustKnow(t, "the first turn", firstSeen(t, rt, lineHello), greeting)
		mustKnow(t, "the runtime's memory", kept, greeting)
	})
	t.Run("two sentences before the answer", func(t *testing.T) {
		mustKnow(t, "the second sentence's turn", firstSeen(t, rt, lineSecond), firstWords, lineSecond)
		mustKnow(t, "the runtime's memory", kept, firstWords, lineSecond)
	})
	t.Run("barge-in", func(t *testing.T) {
		reply := memoryReply(lineLong)
		first, _, _ := strings.Cut(reply, ". ")
		if !strings.HasPrefix(mc.heard, first+".") || !strings.HasPrefix(reply, mc.heard) || mc.heard == reply {
			t.Fatalf("heard %q of the reply %q: want a prefix of it holding its first sentence\n%s", mc.heard, reply, dumpEvents(mc.events))
		}
		seen := firstSeen(t, rt, lineAfterCut)
		mustKnowCut(t, "the turn after the barge-in", seen, mc.heard)
		unheard := firstUnheard(reply, mc.heard)
		if unheard == "" {
			t.Fatalf("no sentence of the reply starts after the heard %q", mc.heard)
		}
		if strings.Contains(joined(seen), unheard) {
			t.Errorf("the turn after the barge-in was given %q, which the caller never heard:\n%s", unheard, dumpMessages(seen))
		}
		if rt.kept != nil {
			mustKnowCut(t, "the runtime's memory", kept, mc.heard)
		}
	})
	t.Run("tool turn superseded", func(t *testing.T) {
		mustKnow(t, "the turn after the tool turn", firstSeen(t, rt, lineAfterTool), toolWords, lineAfterTool)
		mustKnow(t, "the runtime's memory", kept, toolWords, lineAfterTool)
	})
	t.Run("callback message", func(t *testing.T) {
		seen := rt.saw(lineHello)
		if len(seen) < 2 {
			t.Fatalf("the runtime was given %d turns of %q, want the call's and the callback's", len(seen), lineHello)
		}
		mustKnow(t, "the callback's first turn", seen[len(seen)-1], callbackMessage)
		mustKnow(t, "the runtime's memory of the callback", keptCallback, callbackMessage)
	})
	t.Run("command-like words", func(t *testing.T) {
		seen := firstSeen(t, rt, spokenCommand)
		for _, m := range seen {
			if m.Role == "user" && strings.HasPrefix(strings.TrimSpace(m.Content), "/") {
				t.Errorf("the runtime was given a command: %q", m.Content)
			}
		}
		var answer []string
		for _, e := range mc.events {
			if e.Type == obs.AgentDone && e.Turn == turnCommand {
				answer = append(answer, e.Text)
			}
		}
		if want := memoryReply(spokenCommand); len(answer) != 1 || answer[0] != want {
			t.Errorf("the command-like turn was answered %q, want the model's %q", answer, want)
		}
		// Still there after it: the session was not reset.
		mustKnow(t, "the runtime's memory", kept, spokenCommand, lineHello, greeting)
	})
}

// firstSeen is what the model was given for the first turn whose newest words were words.
func firstSeen(t *testing.T, rt memoryRuntime, words string) []turnMessage {
	t.Helper()
	seen := rt.saw(words)
	if len(seen) == 0 {
		t.Fatalf("the runtime's model was never given a turn whose newest words are %q", words)
	}
	return seen[0]
}

// mustKnow checks that msgs hold each of texts; nil msgs (a runtime that keeps nothing)
// are not checked.
func mustKnow(t *testing.T, where string, msgs []turnMessage, texts ...string) {
	t.Helper()
	if msgs == nil {
		return
	}
	all := joined(msgs)
	for _, text := range texts {
		if !strings.Contains(all, text) {
			t.Errorf("%s lacks %q:\n%s", where, text, dumpMessages(msgs))
		}
	}
}

// mustKnowCut checks that msgs tell the heard part of a reply and that it was cut off: as
// the history's "<heard> [interrupted by caller]", or in a catch-up note.
func mustKnowCut(t *testing.T, where string, msgs []turnMessage, heard string) {
	t.Helper()
	all := joined(msgs)
	if !strings.Contains(all, heard+" "+voice.InterruptedMarker) &&
		!strings.Contains(all, "the caller heard only \u201c"+heard+"\u201d, then interrupted") {
		t.Errorf("%s does not tell that the caller heard only %q and cut the reply off:\n%s", where, heard, dumpMessages(msgs))
	}
}

// firstUnheard is the opening of the first sentence of reply that starts after what was
// heard: its first four words, which a runtime keeping a longer part of the reply would
// hold even when it was cut off within that sentence.
func firstUnheard(reply, heard string) string {
	rest := strings.TrimPrefix(reply, heard)
	if i := strings.Index(rest, ". "); i >= 0 && !strings.HasSuffix(heard, ".") {
		rest = rest[i+2:] // the end of the sentence cut in its middle
	}
	words := strings.Fields(rest)
	return strings.Join(words[:min(4, len(words))], " ")
}

func joined(msgs []turnMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

func dumpMessages(msgs []turnMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "  %s: %q\n", m.Role, m.Content)
	}
	return b.String()
}
