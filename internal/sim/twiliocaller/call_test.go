package twiliocaller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"github.com/handset-voice/handset/internal/clock"
)

// patience bounds every wait for an event in these tests: a safety net only, generous for
// a loaded machine, since the waits end on the event itself.
const patience = 20 * time.Second

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	return ctx
}

// dial places a call into f; mutate adjusts the options. The call is hung up at cleanup.
func dial(t *testing.T, f *fakeHandset, mutate func(*Options)) (*Call, *fakeStream) {
	t.Helper()
	o := f.options()
	if mutate != nil {
		mutate(&o)
	}
	c, err := Dial(testCtx(t), o)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Hangup() })
	return c, f.nextStream(t)
}

func withClock(clk clock.Clock) func(*Options) { return func(o *Options) { o.Clock = clk } }

func newFakeClock() *clock.Fake { return clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

func waitFor(t *testing.T, c *Call, what string, cond func(Snapshot) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := c.WaitFor(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func countAtLeast(kind EventKind, n int) func(Snapshot) bool {
	return func(s Snapshot) bool { return s.Count(kind) >= n }
}

// checkSequence asserts every message after connected numbers up from 1 with no gap,
// except the raw frames given, which SendRaw wrote as they were.
func checkSequence(t *testing.T, start twMsg, msgs []twMsg, raw ...string) {
	t.Helper()
	want := 1
	for _, m := range append([]twMsg{start}, msgs...) {
		if slices.Contains(raw, m.raw) {
			continue
		}
		if m.SequenceNumber != strconv.Itoa(want) {
			t.Fatalf("sequenceNumber %q on %s, want %d", m.SequenceNumber, m.raw, want)
		}
		want++
	}
}

func TestDialSignsWebhookAndStreamThenHangsUpCleanly(t *testing.T) {
	f := newFakeHandset(t)
	c, fs := dial(t, f, nil)

	f.mu.Lock()
	hook := f.webhooks[0]
	f.mu.Unlock()
	if hook.Get("CallSid") != c.CallSid() || hook.Get("AccountSid") != testAccountSid || hook.Get("From") != DefaultFrom || hook.Get("To") != DefaultTo {
		t.Errorf("webhook form %v does not describe call %s", hook, c.CallSid())
	}
	if !callSidRE.MatchString(c.CallSid()) || !streamSidRE.MatchString(c.StreamSid()) {
		t.Errorf("sids %q %q", c.CallSid(), c.StreamSid())
	}
	tw := c.TwiML()
	if d := cmp.Diff([]string{"Connect", "Pause"}, tw.Verbs); d != "" {
		t.Errorf("verbs (-want +got):\n%s", d)
	}
	var start map[string]any
	if err := json.Unmarshal([]byte(fs.start.raw), &start); err != nil {
		t.Fatal(err)
	}
	wantStart := map[string]any{
		"event": "start", "sequenceNumber": "1", "streamSid": c.StreamSid(),
		"start": map[string]any{
			"streamSid": c.StreamSid(), "accountSid": testAccountSid, "callSid": c.CallSid(),
			"tracks":           []any{"inbound"},
			"customParameters": map[string]any{"token": tw.Parameters["token"], "callSid": c.CallSid()},
			"mediaFormat":      map[string]any{"encoding": "audio/x-mulaw", "sampleRate": 8000.0, "channels": 1.0},
		},
	}
	if d := cmp.Diff(wantStart, start); d != "" {
		t.Errorf("start message (-want +got):\n%s", d)
	}

	if err := c.Hangup(); err != nil {
		t.Fatalf("Hangup: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after Hangup returned")
	}
	msgs := fs.drain()
	if len(msgs) == 0 {
		t.Fatal("no messages after start")
	}
	checkSequence(t, fs.start, msgs)
	last := msgs[len(msgs)-1]
	if last.Event != "stop" || last.StreamSid != c.StreamSid() || last.Stop == nil ||
		last.Stop.AccountSid != testAccountSid || last.Stop.CallSid != c.CallSid() {
		t.Fatalf("last message %s, want stop for the call", last.raw)
	}
	if websocket.CloseStatus(fs.closeErr) != websocket.StatusNormalClosure {
		t.Fatalf("socket ended with %v, want a normal close", fs.closeErr)
	}
	e, ok := c.Ending()
	if !ok || e.ByHandset || e.Code != websocket.StatusNormalClosure || e.Err != nil {
		t.Fatalf("Ending = %+v, %t", e, ok)
	}
	if s := c.Snapshot(); s.Count(StopSent) != 1 || s.Count(Closed) != 1 || len(s.ProtocolErrors()) != 0 {
		t.Fatalf("recording after hangup: %v", s)
	}
	if err := c.Hangup(); err != nil {
		t.Fatalf("second Hangup: %v", err)
	}
}

func TestSpeechStreamsAtRealTimeInTwentyMillisecondFrames(t *testing.T) {
	f := newFakeHandset(t)
	dialStarted := time.Now()
	c, fs := dial(t, f, nil)
	speech := tone(time.Second, 0.3)
	if err := c.SayAndWait(testCtx(t), speech); err != nil {
		t.Fatalf("SayAndWait: %v", err)
	}
	if err := c.DTMF("5"); err != nil {
		t.Fatal(err)
	}
	if err := c.DTMF("x"); err == nil {
		t.Error("DTMF accepted digit x")
	}
	raw := `{"event":"bogus","note":"fault injection"}`
	if err := c.SendRaw(raw); err != nil {
		t.Fatal(err)
	}
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}
	msgs := fs.drain()
	checkSequence(t, fs.start, msgs, raw)

	var media []twMsg
	var sawDTMF, sawRaw bool
	for _, m := range msgs {
		switch {
		case m.raw == raw:
			sawRaw = true
			if !sawDTMF {
				t.Error("raw frame overtook the dtmf queued before it")
			}
		case m.Event == "dtmf":
			sawDTMF = true
			if m.DTMF == nil || m.DTMF.Digit != "5" || m.DTMF.Track != "inbound_track" || m.StreamSid != c.StreamSid() {
				t.Errorf("dtmf message %s", m.raw)
			}
		case m.Event == "media":
			media = append(media, m)
		}
	}
	if !sawDTMF || !sawRaw {
		t.Fatalf("dtmf seen %t, raw frame seen %t", sawDTMF, sawRaw)
	}

	var heard []byte
	first, speechFrames := -1, 0
	for i, m := range media {
		if m.Media.Track != "inbound" || m.StreamSid != c.StreamSid() ||
			m.Media.Chunk != strconv.Itoa(i+1) || m.Media.Timestamp != strconv.Itoa(i*20) {
			t.Fatalf("media frame %d: %s", i, m.raw[:min(len(m.raw), 160)])
		}
		p := payloadOf(t, m)
		if len(p) != 160 {
			t.Fatalf("frame %d carries %d bytes", i, len(p))
		}
		if bytes.Count(p, []byte{0xff}) == len(p) {
			continue
		}
		if first < 0 {
			first = i
		}
		if i != first+speechFrames {
			t.Fatalf("speech frame %d is not contiguous with the previous ones", i)
		}
		speechFrames++
		heard = append(heard, p...)
	}
	if speechFrames != 50 || !bytes.Equal(heard, speech) {
		t.Fatalf("%d speech frames carrying %d bytes, want one second: 50 frames, the audio unchanged", speechFrames, len(heard))
	}
	// Never faster than real time: frame n leaves no sooner than start + n×20 ms, and the
	// stream started after dialStarted.
	last := media[len(media)-1]
	if min := time.Duration(len(media)-1) * 20 * time.Millisecond; last.at.Sub(dialStarted) < min {
		t.Fatalf("%d frames arrived within %v of dialling, faster than real time", len(media), last.at.Sub(dialStarted))
	}
	s := c.Snapshot()
	if s.Count(SayStarted) != 1 || s.Count(SayFinished) != 1 || s.Count(DTMFSent) != 1 || s.Count(RawSent) != 1 {
		t.Fatalf("recording: %v", s.Events)
	}
}

func TestFakeClockDrivesTheMediaSchedule(t *testing.T) {
	f := newFakeHandset(t)
	clk := newFakeClock()
	c, fs := dial(t, f, withClock(clk))

	m, _ := fs.next()
	if m.Event != "media" || m.Media.Chunk != "1" || m.Media.Timestamp != "0" {
		t.Fatalf("first message %s, want media chunk 1 at 0 ms", m.raw)
	}
	clk.Advance(time.Second)
	for i := 2; i <= 51; i++ {
		m, _ := fs.next()
		if m.Event != "media" || m.Media.Chunk != strconv.Itoa(i) || m.Media.Timestamp != strconv.Itoa((i-1)*20) {
			t.Fatalf("message %s, want media chunk %d", m.raw, i)
		}
	}
	// The clock stands at 1 s: frame 52 (due at 1020 ms) must not go out, so the next
	// message after hanging up is stop.
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}
	rest := fs.drain()
	if len(rest) != 1 || rest[0].Event != "stop" {
		var events []string
		for _, m := range rest {
			events = append(events, m.Event)
		}
		t.Fatalf("after 51 frames and hangup got %v, want just stop", events)
	}
}

func TestMarkReturnsWhenTheAudioBeforeItHasPlayed(t *testing.T) {
	f := newFakeHandset(t)
	clk := newFakeClock()
	c, fs := dial(t, f, withClock(clk))
	a, b := tone(500*time.Millisecond, 0.3), tone(100*time.Millisecond, 0.2)
	fs.sendMedia(a)
	fs.sendMark("a")
	fs.sendMedia(b)
	fs.sendMark("b")
	waitFor(t, c, "both marks", countAtLeast(MarkSent, 2))

	clk.Advance(499 * time.Millisecond)
	s := c.Snapshot()
	if s.Count(MarkEchoed) != 0 {
		t.Fatalf("mark echoed before its audio played: %v", s.Marks())
	}
	if got := s.PlayedAudio(); !bytes.Equal(got, a[:24*160]) {
		t.Fatalf("played %d bytes by 499 ms, want the first 480 ms (%d)", len(got), 24*160)
	}
	clk.Advance(time.Millisecond)
	if d := cmp.Diff([]Mark{{Name: "a", Echoed: true, EchoedAt: 500 * ms}, {Name: "b"}}, c.Marks()); d != "" {
		t.Fatalf("marks at 500 ms (-want +got):\n%s", d)
	}
	if m, _ := fs.nextNonMedia(); m.Event != "mark" || m.Mark == nil || m.Mark.Name != "a" || m.StreamSid != c.StreamSid() || m.SequenceNumber == "" {
		t.Fatalf("echo %s, want mark a", m.raw)
	}
	clk.Advance(100 * time.Millisecond)
	if m, _ := fs.nextNonMedia(); m.Event != "mark" || m.Mark.Name != "b" {
		t.Fatalf("echo %s, want mark b", m.raw)
	}
	s = c.Snapshot()
	if d := cmp.Diff([]Mark{{Name: "a", Echoed: true, EchoedAt: 500 * ms}, {Name: "b", Echoed: true, EchoedAt: 600 * ms}}, s.Marks()); d != "" {
		t.Fatalf("marks at 600 ms (-want +got):\n%s", d)
	}
	if !bytes.Equal(s.PlayedAudio(), append(append([]byte(nil), a...), b...)) {
		t.Fatal("played audio differs from what Handset sent")
	}
	if d := cmp.Diff([]SpeechSegment{{Start: 0, End: 600 * ms}}, s.SpeechSegments()); d != "" {
		t.Fatalf("speech (-want +got):\n%s", d)
	}
	// With nothing buffered a mark comes straight back.
	fs.sendMark("c")
	waitFor(t, c, "mark c echoed", func(s Snapshot) bool { return s.Count(MarkEchoed) == 3 })
	if got := c.Marks()[2]; got.EchoedAt != 600*ms || got.Cleared {
		t.Fatalf("mark c %+v", got)
	}
	if errs := c.ProtocolErrors(); len(errs) != 0 {
		t.Fatalf("protocol errors: %v", errs)
	}
}

func TestClearDropsQueuedAudioAndReturnsPendingMarksAtOnce(t *testing.T) {
	f := newFakeHandset(t)
	clk := newFakeClock()
	c, fs := dial(t, f, withClock(clk))
	a1, a2 := tone(time.Second, 0.3), tone(time.Second, 0.5)
	fs.sendMedia(a1)
	fs.sendMark("m1")
	fs.sendMedia(a2)
	fs.sendMark("m2")
	waitFor(t, c, "both marks", countAtLeast(MarkSent, 2))
	clk.Advance(300 * time.Millisecond)
	fs.sendClear()
	waitFor(t, c, "the clear", func(s Snapshot) bool { return s.Clears() == 1 })

	s := c.Snapshot()
	want := []Mark{{Name: "m1", Echoed: true, EchoedAt: 300 * ms, Cleared: true}, {Name: "m2", Echoed: true, EchoedAt: 300 * ms, Cleared: true}}
	if d := cmp.Diff(want, s.Marks()); d != "" {
		t.Fatalf("marks after clear (-want +got):\n%s", d)
	}
	if got := s.PlayedAudio(); !bytes.Equal(got, a1[:2400]) {
		t.Fatalf("played %d bytes, want the 300 ms before the clear", len(got))
	}
	if cl := s.Filter(Clear)[0]; cl.Bytes != 16000-2400 {
		t.Fatalf("clear dropped %d bytes, want %d", cl.Bytes, 16000-2400)
	}
	for _, name := range []string{"m1", "m2"} {
		if m, _ := fs.nextNonMedia(); m.Event != "mark" || m.Mark.Name != name {
			t.Fatalf("echo %s, want %s", m.raw, name)
		}
	}
	clk.Advance(3 * time.Second)
	if got := c.PlayedAudio(); len(got) != 2400 {
		t.Fatalf("cleared audio played on: %d bytes", len(got))
	}
	// Audio after a clear plays from when it arrives.
	fs.sendMedia(tone(100*time.Millisecond, 0.3))
	fs.sendMark("m3")
	waitFor(t, c, "m3", countAtLeast(MarkSent, 3))
	clk.Advance(100 * time.Millisecond)
	if got := c.Marks()[2]; !got.Echoed || got.Cleared || got.EchoedAt != 3400*ms {
		t.Fatalf("m3 %+v, want echoed after playing at 3.4 s", got)
	}
	if segs := c.SpeechSegments(); len(segs) != 2 || segs[0] != (SpeechSegment{Start: 0, End: 300 * ms}) || segs[1] != (SpeechSegment{Start: 3300 * ms, End: 3400 * ms}) {
		t.Fatalf("speech %v", segs)
	}
}

// echo sends every media frame the caller streams straight back, as a bot that repeats
// the caller would; it ends when the socket does.
func echo(fs *fakeStream) {
	for m := range fs.in {
		if m.Event != "media" || m.Media == nil {
			continue
		}
		msg := `{"event":"media","streamSid":"` + fs.streamSid + `","media":{"payload":"` + m.Media.Payload + `"}}`
		if fs.conn.Write(context.Background(), websocket.MessageText, []byte(msg)) != nil {
			return
		}
	}
}

func TestSpeechSegmentsOfEchoedSpeech(t *testing.T) {
	f := newFakeHandset(t)
	clk := newFakeClock()
	c, fs := dial(t, f, withClock(clk))
	done := make(chan struct{})
	go func() { defer close(done); echo(fs) }()
	t.Cleanup(func() { _ = c.Hangup(); <-done })

	waitFor(t, c, "the echo of the first frame", countAtLeast(AudioReceived, 1))
	script := append(append(tone(400*time.Millisecond, 0.3), Silence(400*time.Millisecond)...), tone(400*time.Millisecond, 0.3)...)
	said := c.Say(script)
	// Step the clock one frame at a time and let each echo land before the next step, so
	// every frame plays exactly 20 ms after it was sent.
	for k := 1; k <= 70; k++ {
		clk.Advance(20 * time.Millisecond)
		waitFor(t, c, "frame "+strconv.Itoa(k)+" echoed", countAtLeast(AudioReceived, k+1))
	}
	select {
	case <-said:
	default:
		t.Fatal("Say not finished after its 60 frames were sent")
	}
	want := []SpeechSegment{{Start: 20 * ms, End: 420 * ms}, {Start: 820 * ms, End: 1220 * ms}}
	if d := cmp.Diff(want, c.SpeechSegments()); d != "" {
		t.Fatalf("speech segments (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		from, to time.Duration
		want     bool
	}{{0, 20 * ms, false}, {100 * ms, 200 * ms, true}, {420 * ms, 820 * ms, false}, {1 * time.Second, 2 * time.Second, true}, {1220 * ms, time.Hour, false}} {
		if got := c.HeardSpeech(tc.from, tc.to); got != tc.want {
			t.Errorf("HeardSpeech(%v, %v) = %t, want %t", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestProtocolErrorsAreRecordedAndTheCallGoesOn(t *testing.T) {
	f := newFakeHandset(t)
	c, fs := dial(t, f, nil)
	sid := c.StreamSid()
	fs.sendText(`{"event":"media","streamSid":"MZ00000000000000000000000000000000","media":{"payload":"/w=="}}`)
	fs.sendText(`{"event":"hello","streamSid":"` + sid + `"}`)
	fs.sendText(`{"event":"media","streamSid":"` + sid + `","media":{"payload":"not base64!"}}`)
	if err := fs.conn.Write(context.Background(), websocket.MessageBinary, []byte{0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	fs.sendText(`this is not json`)
	fs.sendText(`{"event":"mark","streamSid":"` + sid + `","mark":{}}`)
	fs.sendText(`{"event":"media","streamSid":"` + sid + `"}`)
	fs.sendMark("still-alive")
	waitFor(t, c, "the valid mark's echo", countAtLeast(MarkEchoed, 1))

	var codes []int
	for _, e := range c.ProtocolErrors() {
		codes = append(codes, e.Code)
	}
	want := []int{CodeProtocol, CodeProtocol, CodeMalformed, CodeMalformed, CodeMalformed, CodeMalformed, CodeMalformed}
	if d := cmp.Diff(want, codes); d != "" {
		t.Fatalf("protocol error codes (-want +got):\n%s", d)
	}
	if _, ended := c.Ending(); ended {
		t.Fatal("a bad message ended the call")
	}
}

func TestHandsetClosingEndsTheCall(t *testing.T) {
	for _, tc := range []struct {
		code    websocket.StatusCode
		reason  string
		wantErr bool
	}{
		{websocket.StatusNormalClosure, "bye", false},
		{websocket.StatusInternalError, "oops", true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			f := newFakeHandset(t)
			c, fs := dial(t, f, nil)
			fs.sendMedia(tone(time.Second, 0.3))
			waitFor(t, c, "audio", countAtLeast(AudioReceived, 1))
			if err := fs.conn.Close(tc.code, tc.reason); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.Done():
			case <-time.After(patience):
				t.Fatal("Done not closed after Handset closed the socket")
			}
			e, ok := c.Ending()
			if !ok || !e.ByHandset || e.Code != tc.code || e.Reason != tc.reason || (e.Err != nil) != tc.wantErr {
				t.Fatalf("Ending = %+v", e)
			}
			if tc.wantErr && !strings.Contains(c.Err().Error(), strconv.Itoa(int(tc.code))) {
				t.Fatalf("Err %v does not name the close status", c.Err())
			}
			closed := c.Snapshot().Filter(Closed)
			if len(closed) != 1 || closed[0].Bytes == 0 || closed[0].Code != int(tc.code) {
				t.Fatalf("Closed events %v, want one reporting the unplayed audio", closed)
			}
			// Everything after the end reports it.
			if _, open := <-c.Say(tone(20*time.Millisecond, 0.3)); open {
				t.Fatal("Say channel delivered a value")
			}
			if err := c.SayAndWait(testCtx(t), tone(20*time.Millisecond, 0.3)); !errors.Is(err, ErrEnded) {
				t.Fatalf("SayAndWait after end: %v", err)
			}
			if err := c.DTMF("1"); !errors.Is(err, ErrEnded) {
				t.Fatalf("DTMF after end: %v", err)
			}
			if err := c.WaitFor(testCtx(t), func(s Snapshot) bool { return s.Clears() > 0 }); !errors.Is(err, ErrEnded) {
				t.Fatalf("WaitFor after end: %v", err)
			}
			if err := c.Hangup(); (err != nil) != tc.wantErr {
				t.Fatalf("Hangup after end: %v", err)
			}
		})
	}
}

func TestCancellingTheContextDropsTheCall(t *testing.T) {
	f := newFakeHandset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := Dial(ctx, f.options())
	if err != nil {
		t.Fatal(err)
	}
	fs := f.nextStream(t)
	waitCtx := testCtx(t)
	go func() { _ = c.WaitFor(waitCtx, func(Snapshot) bool { return false }) }() // a waiter must not keep the call alive
	cancel()
	select {
	case <-c.Done():
	case <-time.After(patience):
		t.Fatal("Done not closed after the context was cancelled")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", c.Err())
	}
	for _, m := range fs.drain() {
		if m.Event == "stop" {
			t.Fatal("a dropped call sent stop")
		}
	}
}

func TestDialReportsHandsetRefusals(t *testing.T) {
	f := newFakeHandset(t)
	ctx := testCtx(t)

	f.answer(500, "boom", publicStream)
	_, err := Dial(ctx, f.options())
	var we *WebhookError
	if !errors.As(err, &we) || we.Status != 500 || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Dial against a failing webhook: %v", err)
	}

	f.answer(0, "", publicStream+"?token=1")
	if _, err = Dial(ctx, f.options()); !errors.As(err, &we) || we.Status != 200 || !strings.Contains(err.Error(), "31920") {
		t.Fatalf("Dial with a query in the stream URL: %v", err)
	}

	f.answer(0, "", publicStream)
	o := f.options()
	o.AuthToken = "not-the-token"
	if _, err = Dial(ctx, o); !errors.As(err, &we) || we.Status != 403 {
		t.Fatalf("Dial with the wrong auth token: %v", err)
	}
	o = f.options()
	o.PublicURL = "" // signed over the loopback URL Handset does not know itself by
	if _, err = Dial(ctx, o); !errors.As(err, &we) || we.Status != 403 {
		t.Fatalf("Dial signed over the wrong URL: %v", err)
	}
}

func TestDialStreamURLOptions(t *testing.T) {
	f := newFakeHandset(t)
	local := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/twilio/stream"

	// An explicit mapping; the upgrade is still signed over the TwiML URL.
	var mapped string
	c, _ := dial(t, f, func(o *Options) {
		o.DialURL = func(u string) string { mapped = u; return local }
	})
	if mapped != publicStream {
		t.Fatalf("DialURL got %q, want the TwiML URL", mapped)
	}
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}

	// Real Twilio refuses ws://; InsecureStreamURL allows it for local set-ups.
	f.answer(0, "", local)
	if _, err := Dial(testCtx(t), f.options()); err == nil || !strings.Contains(err.Error(), "wss") {
		t.Fatalf("Dial to a ws:// stream: %v", err)
	}
	c, _ = dial(t, f, func(o *Options) { o.InsecureStreamURL = true })
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}
}
