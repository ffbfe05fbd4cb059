package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/browsercaller"
	"github.com/handset-voice/handset/internal/testpeer"
)

// TestBrowserCall: a call from the browser page's socket runs the same engine and journal
// as a phone call: the greeting and replies arrive as 16 kHz PCM with marks the page
// echoes, the page sees the transcript and the agent's words as they happen, talking over
// a long reply clears it, and the page's hang-up ends the call.
func TestBrowserCall(t *testing.T) {
	testpeer.Slow(t, "a browser call in real time")
	r := startServe(t, []string{"what are your opening hours", "LONG SLOW tell me everything about the menu", "stop please"},
		"HANDSET_BROWSER=true")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := browsercaller.Dial(ctx, r.baseURL(), browsercaller.NewJar())
	if err != nil {
		t.Fatal(err)
	}
	wait := func(typ string, n int) browsercaller.Event {
		t.Helper()
		e, err := c.WaitEvent(ctx, typ, n)
		if err != nil {
			t.Fatalf("%v\nevents: %+v\n%s", err, c.Events(), r.logs.String())
		}
		return e
	}
	wait(obs.PlayoutDone, 1) // the greeting played to its end: its marks came back
	if len(c.Audio()) == 0 {
		t.Fatal("no greeting audio")
	}
	say := func(d time.Duration, seed int64) {
		t.Helper()
		if err := c.Say(ctx, audiotest.SpeechLike(16000, d, seed), 900*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	say(1200*time.Millisecond, 1)
	if e := wait(obs.TurnCommit, 1); e.Text != "what are your opening hours" || e.Turn != 1 {
		t.Errorf("commit %+v", e)
	}
	if e := wait(obs.TTSRequest, 2); e.Turn != 1 || e.Text == "" {
		t.Errorf("the page did not see the reply's words: %+v", e)
	}
	wait(obs.PlayoutDone, 2)

	say(1200*time.Millisecond, 2) // a long reply ...
	wait(obs.PlayoutFirstAudio, 3)
	time.Sleep(1500 * time.Millisecond)
	say(1000*time.Millisecond, 3) // ... talked over
	if e := wait(obs.BargeIn, 1); e.Turn != 2 {
		t.Errorf("barge-in %+v, want on turn 2", e)
	}
	wait(obs.TurnCommit, 3)
	wait(obs.PlayoutDone, 3)
	if n := c.Clears(); n != 1 {
		t.Errorf("clears = %d, want 1", n)
	}
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}
	<-c.Done()

	events := journalOf(t, r, c.ID())
	start := events[0]
	if start.Type != obs.CallStart || start.Carrier != "browser" || !strings.HasPrefix(start.CallerHash, "ch_") {
		t.Errorf("call.start %+v", start)
	}
	if end := events[len(events)-1]; end.Reason != "caller_hangup" {
		t.Errorf("call.end %+v, want caller_hangup", end)
	}
	if got := r.agent.Requests(); len(got) != 3 {
		t.Errorf("agent requests = %d, want 3", len(got))
	}
	if strings.Contains(r.logs.String(), "browser:") {
		t.Error("a raw browser caller id reached the logs")
	}
}

// TestBrowserCallerIdentity: the same browser (cookie) calling twice is the same caller to
// the agent's memory; another browser is not.
func TestBrowserCallerIdentity(t *testing.T) {
	r := startServe(t, nil, "HANDSET_BROWSER=true")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hashOf := func(jar http.CookieJar) string {
		t.Helper()
		c, err := browsercaller.Dial(ctx, r.baseURL(), jar)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Hangup(); err != nil {
			t.Fatal(err)
		}
		<-c.Done()
		return journalOf(t, r, c.ID())[0].CallerHash
	}
	alice := browsercaller.NewJar()
	first, again, other := hashOf(alice), hashOf(alice), hashOf(browsercaller.NewJar())
	if first == "" || first != again {
		t.Errorf("the same browser hashed to %q then %q", first, again)
	}
	if other == first {
		t.Error("two browsers share a caller hash")
	}
}

// TestBrowserChannelRefusesBadInput: malformed page messages are counted and the call goes
// on; a cross-site page cannot open the socket; the page is off unless configured.
func TestBrowserChannelRefusesBadInput(t *testing.T) {
	r := startServe(t, []string{"hello there"}, "HANDSET_BROWSER=true")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, _, err := websocket.Dial(ctx, "ws://"+r.addr+"/browser/ws", &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {"https://evil.example"}},
	})
	if err == nil {
		t.Error("a cross-origin page opened the media socket")
	}

	c, err := browsercaller.Dial(ctx, r.baseURL(), browsercaller.NewJar())
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{`not json`, `{"type":"warp"}`, `{"type":"dtmf","digit":"12"}`} {
		if err := c.Send(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.WaitEvent(ctx, obs.PlayoutDone, 1); err != nil { // the greeting
		t.Fatal(err)
	}
	if err := c.Send(ctx, websocket.MessageBinary, []byte{1, 2, 3}); err != nil { // half a sample: dropped whole
		t.Fatal(err)
	}
	if err := c.Say(ctx, audiotest.SpeechLike(16000, 1200*time.Millisecond, 5), 900*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitEvent(ctx, obs.TurnCommit, 1); err != nil {
		t.Fatalf("%v\nevents: %+v\n%s", err, c.Events(), r.logs.String())
	}
	_ = c.Hangup()
	<-c.Done()
	if got := eventsOf(journalOf(t, r, c.ID()), obs.MediaMalformed); len(got) != 4 {
		t.Errorf("malformed events %+v, want 4", got)
	}

	off := startServe(t, nil)
	resp, err := http.Get(off.baseURL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET / without HANDSET_BROWSER: %d, want 404", resp.StatusCode)
	}
}
