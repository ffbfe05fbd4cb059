package cli

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
)

// TestReplayedWebhookIsRefused: for every carrier, a call's first webhook sent again after
// the call is refused as the carrier's rules require (the kit knows them), and only the
// one call ran.
func TestReplayedWebhookIsRefused(t *testing.T) { forEachCarrier(t, testReplayedWebhookIsRefused) }

func testReplayedWebhookIsRefused(t *testing.T, kit simkit.Kit) {
	r := startServeWith(t, kit, nil)
	if err := r.vendor.Replay(context.Background(), r.baseURL()); err != nil {
		t.Fatalf("%v\n%s", err, r.logs)
	}
	r.journal() // exactly one call ran
}

// TestTwilioRetriedWebhookGetsTheFirstAnswer: through `handset serve` and its store, a
// retried Twilio voice webhook gets the first answer (one token, one call); once the
// call's stream has opened, a replay of the webhook is refused with 409 and logged, and
// its token opens nothing.
func TestTwilioRetriedWebhookGetsTheFirstAnswer(t *testing.T) {
	r := startServe(t, nil)
	ctx := context.Background()
	opts := twiliocaller.Options{BaseURL: r.baseURL(), AuthToken: r.token, InsecureStreamURL: true,
		CallSid: twiliocaller.NewSid("CA"), IdempotencyToken: "retry-token"}

	first, err := twiliocaller.PostWebhook(ctx, opts, nil)
	if err != nil || first.Status != http.StatusOK {
		t.Fatalf("webhook: %d %v", first.Status, err)
	}
	retry, err := twiliocaller.PostWebhook(ctx, opts, nil)
	if err != nil || retry.Status != http.StatusOK || !bytes.Equal(retry.Body, first.Body) {
		t.Fatalf("carrier retry: %d %v, same answer %v", retry.Status, err, bytes.Equal(retry.Body, first.Body))
	}
	tw, err := twiliocaller.ParseTwiML(first.Body)
	if err != nil {
		t.Fatal(err)
	}
	c, err := twiliocaller.Connect(ctx, opts, tw)
	if err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t0-end")

	replay := opts
	replay.IdempotencyToken = ""
	late, err := twiliocaller.PostWebhook(ctx, replay, nil)
	if err != nil || late.Status != http.StatusConflict {
		t.Errorf("replayed webhook after the stream opened: %d %v %q, want 409", late.Status, err, late.Body)
	}
	res, err := twiliocaller.DialStream(ctx, twiliocaller.StreamProbe{
		URL: "ws://" + r.addr + "/twilio/stream", SignURL: tw.URL, AuthToken: r.token,
		CallSid: opts.CallSid, Parameters: tw.Parameters, Wait: 10 * time.Second,
	})
	if err != nil || res.Accepted() || !strings.Contains(res.Reason, "already used") {
		t.Errorf("second stream with the call's token: %+v %v, want it refused", res, err)
	}
	_ = c.Hangup()
	<-c.Done()
	r.journal() // exactly one call ran
	if !strings.Contains(r.logs.String(), "refused a repeated voice webhook") {
		t.Errorf("the replay was not logged:\n%s", r.logs)
	}
}
