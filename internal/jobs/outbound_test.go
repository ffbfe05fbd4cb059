package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/twilio"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

const ourLine = "+15550009999"

// twilioFake is the fake Twilio REST API, and a client of it. Nobody answers its calls'
// webhooks (there is no Handset here): a call it places fails to fetch TwiML and ends.
func twilioFake(t *testing.T, answer func(string) faketwilio.Answer) (*faketwilio.Server, *twilio.Control) {
	t.Helper()
	tw := faketwilio.New(faketwilio.Options{Numbers: []faketwilio.Number{{PhoneNumber: ourLine}}, Answer: answer})
	srv := httptest.NewServer(tw)
	t.Cleanup(func() { tw.Close(); srv.Close() })
	rest, err := twilio.NewControl(twilio.RESTOptions{BaseURL: srv.URL, AccountSID: tw.AccountSID(), AuthToken: tw.AuthToken()})
	if err != nil {
		t.Fatal(err)
	}
	return tw, rest
}

// claimed enqueues a call job and claims it as owner, as a runner would.
func claimed(t *testing.T, st store.Store, r *Runner, job CallJob) *Lease {
	t.Helper()
	if _, err := QueueCall(context.Background(), st, job, QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	j, ok, err := st.Claim(context.Background(), r.o.Owner, nil, time.Minute, time.Now())
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	return &Lease{Job: j, r: r}
}

func idleRunner(t *testing.T, st store.Store, owner string) *Runner {
	t.Helper()
	r, err := NewRunner(Options{Store: st, Owner: owner, Kinds: map[string]Kind{KindCall: {Run: func(context.Context, *Lease) (any, error) { return nil, nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A job resumed after its owner died with the call placed (its checkpoint has the
// carrier's id) waits for that call's end and never places another.
func TestResumedCallJobDoesNotDialAgain(t *testing.T) {
	st := openStore(t)
	tw, rest := twilioFake(t, func(string) faketwilio.Answer { return faketwilio.Answer{Outcome: faketwilio.OutcomeBusy} })
	calls := &Calls{Store: st, Dialer: rest, PublicURL: "http://127.0.0.1:9", From: ourLine, Poll: 10 * time.Millisecond}

	// node-a places the call and dies right after checkpointing it
	a := claimed(t, st, idleRunner(t, st, "node-a"), CallJob{To: "+15550102000"})
	var p callProgress
	if err := calls.place(context.Background(), a, CallJob{To: "+15550102000"}, &p, calls.log()); err != nil {
		t.Fatal(err)
	}
	if len(tw.Calls()) != 1 || p.SID == "" {
		t.Fatalf("placed %d calls, sid %q", len(tw.Calls()), p.SID)
	}
	// the carrier reports the end (busy) before anyone resumes
	if err := st.EndCall(context.Background(), p.CallID, time.Now(), "busy"); err != nil {
		t.Fatal(err)
	}
	// node-b reclaims the job after the lease and resumes it
	j, ok, err := st.Claim(context.Background(), "node-b", nil, time.Minute, time.Now().Add(2*time.Minute))
	if err != nil || !ok || j.ID != a.Job.ID {
		t.Fatalf("reclaim: %v %v %d", ok, err, j.ID)
	}
	_, err = calls.Run(context.Background(), &Lease{Job: j, r: idleRunner(t, st, "node-b")})
	var ra retryAfter
	if !errors.As(err, &ra) || !strings.Contains(err.Error(), "busy") || IsPermanent(err) {
		t.Errorf("a busy callee: %v, want a retry later", err)
	}
	if len(tw.Calls()) != 1 {
		t.Errorf("the resumed job dialled again: %d calls", len(tw.Calls()))
	}
	if after, _ := st.Job(context.Background(), j.ID); string(after.Checkpoint) != "null" {
		t.Errorf("checkpoint after a busy attempt = %s: the next attempt must place a new call", after.Checkpoint)
	}
}

// A job whose owner died between asking the carrier and checkpointing adopts the call the
// carrier's status callback recorded; with no such record it places the call itself.
func TestResumedCallJobAdoptsOrPlaces(t *testing.T) {
	st := openStore(t)
	tw, rest := twilioFake(t, func(string) faketwilio.Answer { return faketwilio.Answer{Outcome: faketwilio.OutcomeNoAnswer} })
	calls := &Calls{Store: st, Dialer: rest, PublicURL: "http://127.0.0.1:9", From: ourLine,
		Poll: 10 * time.Millisecond, AdoptWait: 200 * time.Millisecond}
	for _, adopt := range []bool{true, false} {
		l := claimed(t, st, idleRunner(t, st, "node-a"), CallJob{To: "+15550102000"})
		id := voice.NewCallID()
		if err := st.StartCall(context.Background(), store.Call{ID: id, Direction: voice.Outbound, StartedAt: time.Now(), JobID: l.Job.ID}); err != nil {
			t.Fatal(err)
		}
		if err := l.Checkpoint(context.Background(), callProgress{CallID: id}); err != nil {
			t.Fatal(err)
		}
		before := len(tw.Calls())
		if adopt { // the carrier's "initiated" callback reached some node
			info, err := rest.Dial(context.Background(), carrier.Dial{CallID: id, To: "+15550102000", From: ourLine, PublicURL: "http://127.0.0.1:9"})
			if err != nil {
				t.Fatal(err)
			}
			_ = st.UpdateCall(context.Background(), id, store.CallUpdate{CarrierRef: info.Ref})
			before++
		}
		var p callProgress
		_, _ = l.Resume(&p)
		if err := calls.place(context.Background(), l, CallJob{To: "+15550102000"}, &p, calls.log()); err != nil {
			t.Fatal(err)
		}
		placed := len(tw.Calls()) - before
		if adopt && placed != 0 || !adopt && placed != 1 || p.CallID != id || p.SID == "" {
			t.Errorf("adopt=%v: placed %d new calls, progress %+v", adopt, placed, p)
		}
		_ = st.Complete(context.Background(), l.Job.ID, "node-a", nil, time.Now())
	}
}

// What the carrier refuses as bad is not retried, and the call is recorded as failed.
func TestCarrierRefusalIsFinal(t *testing.T) {
	st := openStore(t)
	_, rest := twilioFake(t, nil)
	calls := &Calls{Store: st, Dialer: rest, PublicURL: "http://127.0.0.1:9", From: "+15550001234"} // not the account's number
	l := claimed(t, st, idleRunner(t, st, "node-a"), CallJob{To: "+15550102000"})
	_, err := calls.Run(context.Background(), l)
	if !IsPermanent(err) || !strings.Contains(err.Error(), "not yet verified") {
		t.Errorf("unverified From: %v, want a permanent refusal quoting Twilio", err)
	}
	var p callProgress
	_, _ = l.Resume(&p)
	if c, _ := st.Call(context.Background(), p.CallID); c.Outcome != "failed" {
		t.Errorf("the refused call's record: %+v", c)
	}
}

func TestQueueCallChecks(t *testing.T) {
	st := openStore(t)
	for _, bad := range []CallJob{
		{To: "555-0100"}, {To: "+15550102000", From: "me"}, {To: "+15550102000", OnMachine: "sing"},
		{To: "+15550102000", Deliver: true}, {To: "+15550102000", FirstMessage: strings.Repeat("a", messageLimit+1)},
	} {
		if _, err := QueueCall(context.Background(), st, bad, QueueOptions{}); !errors.Is(err, ErrBadRequest) {
			t.Errorf("QueueCall(%+v) = %v, want a bad request", bad, err)
		}
	}
	j, err := QueueCall(context.Background(), st, CallJob{To: "+1 (555) 010-2000", FirstMessage: "  hi  "}, QueueOptions{DedupeKey: "k"})
	var got CallJob
	if err != nil || json.Unmarshal(j.Payload, &got) != nil || got.To != "+15550102000" || got.FirstMessage != "hi" {
		t.Errorf("queued %s %v", j.Payload, err)
	}
	if _, err := QueueCall(context.Background(), st, CallJob{To: "+15550102000"}, QueueOptions{DedupeKey: "k"}); !errors.Is(err, store.ErrDuplicate) {
		t.Errorf("repeat of a dedupe key: %v", err)
	}
}

func TestAllowList(t *testing.T) {
	a, err := ParseAllowList(" +1 (415) 555-0100 , +1800*")
	if err != nil {
		t.Fatal(err)
	}
	for number, ok := range map[string]bool{"+14155550100": true, "+18005550000": true, "+14155550101": false, "+19005550000": false} {
		if a.Allows(number) != ok {
			t.Errorf("Allows(%s) = %v", number, !ok)
		}
	}
	var none AllowList
	if none.Allows("+14155550100") {
		t.Error("an empty list allows a transfer")
	}
	for _, bad := range []string{"sales", "+1*", "1800*", "+18x*"} {
		if _, err := ParseAllowList(bad); err == nil {
			t.Errorf("ParseAllowList(%q) accepted", bad)
		}
	}
}

// PlanDelivery: nobody known, someone known only from the browser page (which cannot be
// called back), someone who phoned (called back on the number they used).
func TestPlanDelivery(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	channels := map[string]Channel{
		"twilio":  ChannelFunc(func() error { return nil }),
		"browser": ChannelFunc(func() error { return errors.New("a browser page cannot be called back") }),
	}
	call := func(id, carrier, from, hash string, dir voice.Direction, at time.Time) {
		to := ourLine
		if dir == voice.Outbound {
			from, to = ourLine, from
		}
		if err := st.StartCall(ctx, store.Call{ID: voice.CallID(id), Carrier: carrier, Direction: dir, From: from, To: to, CallerHash: hash, StartedAt: at}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.TouchSession(ctx, hash, "handset:"+hash, voice.CallID(id), at); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	call("c_web", "browser", "", "ch_web", voice.Inbound, t0)
	call("c_phone", "twilio", "+15550102000", "ch_phone", voice.Inbound, t0)
	call("c_phone_web", "browser", "", "ch_phone", voice.Inbound, t0.Add(time.Minute)) // later, from the browser
	call("c_out", "twilio", "+15550103000", "ch_out", voice.Outbound, t0)

	_, err := PlanDelivery(ctx, st, channels, DeliverRequest{SessionKey: "handset:ch_nobody", Message: "hi"})
	if !errors.Is(err, ErrUnknownRecipient) || !strings.Contains(err.Error(), "no caller is known") {
		t.Errorf("unknown: %v", err)
	}
	_, err = PlanDelivery(ctx, st, channels, DeliverRequest{CallerHash: "ch_web", Message: "hi"})
	if !errors.Is(err, ErrCannotDeliver) || !strings.Contains(err.Error(), "browser: a browser page cannot be called back") {
		t.Errorf("browser only: %v", err)
	}
	plan, err := PlanDelivery(ctx, st, channels, DeliverRequest{SessionKey: "handset:ch_phone", Message: " Your order shipped. "})
	if err != nil || plan.To != "+15550102000" || !plan.Deliver || plan.FirstMessage != "Your order shipped." || plan.OnMachine != "message" {
		t.Errorf("phone caller, last seen on the browser: %+v %v", plan, err)
	}
	if plan, err := PlanDelivery(ctx, st, channels, DeliverRequest{CallID: "c_out", Message: "hi"}); err != nil || plan.To != "+15550103000" {
		t.Errorf("someone Handset called: %+v %v", plan, err)
	}
	for _, bad := range []DeliverRequest{{Message: "hi"}, {CallerHash: "ch_phone"}, {CallerHash: "ch_phone", CallID: "c_phone", Message: "hi"}} {
		if _, err := PlanDelivery(ctx, st, channels, bad); !errors.Is(err, ErrBadRequest) {
			t.Errorf("PlanDelivery(%+v) = %v, want a bad request", bad, err)
		}
	}
}
