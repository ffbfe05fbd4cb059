package cli

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakewebhook"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
)

// TestWebhookRuntime: a plain webhook answers the turns; a failing one gets the spoken
// error message and the call goes on; two calls are told apart, the same caller is
// recognised, and no phone number is ever sent.
func TestWebhookRuntime(t *testing.T) {
	hook := fakewebhook.New(fakewebhook.Options{Mode: fakewebhook.ModeSSE})
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(func() { hook.Close(); hookSrv.Close() })
	r := startServe(t, []string{"hello webhook", "FAIL500 now", "still there", "second call"},
		"HANDSET_AGENT=webhook", "HANDSET_AGENT_URL="+hookSrv.URL+"/turn", "HANDSET_AGENT_KEY=")
	ctx := context.Background()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	for turn, seed := range []int64{61, 62, 63} {
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, seed)); err != nil {
			t.Fatal(err)
		}
		waitMark(ctx, t, c, markEnd(turn+1))
	}
	_ = c.Hangup()
	<-c.Done()
	second := r.dial(ctx, func(o *twiliocaller.Options) { o.From = twiliocaller.DefaultFrom })
	waitMark(ctx, t, second, "t0-end")
	if err := second.SayAndWait(ctx, speech(1200*time.Millisecond, 64)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, second, "t1-end")
	_ = second.Hangup()
	<-second.Done()

	reqs := hook.Requests()
	if len(reqs) != 4 {
		t.Fatalf("webhook got %d turns, want 4", len(reqs))
	}
	if reqs[0].CallID == reqs[3].CallID {
		t.Error("two calls share a call id")
	}
	if reqs[0].CallerHash == "" || reqs[0].CallerHash != reqs[3].CallerHash {
		t.Errorf("the same caller is not recognised across calls: %q vs %q", reqs[0].CallerHash, reqs[3].CallerHash)
	}
	for _, rq := range reqs {
		if strings.Contains(string(rq.Body), "5550100001") || strings.Contains(string(rq.Body), "5550100002") {
			t.Errorf("a phone number was sent to the runtime: %s", rq.Body)
		}
	}
	logs := r.logs.String()
	if strings.Contains(logs, "5550100001") {
		t.Error("a phone number reached the logs")
	}
	var spoken []string
	for _, e := range eventsOf(journalOf(t, r, reqs[0].CallID), obs.TTSRequest) {
		spoken = append(spoken, e.Text)
	}
	said := strings.Join(spoken, "|")
	if !strings.Contains(said, "Sorry, something went wrong.") || strings.Contains(said, "500") {
		t.Errorf("the webhook failure was not handled by the error message: %q", said)
	}
}
