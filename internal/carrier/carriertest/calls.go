package carriertest

import (
	"errors"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// dial places a call from the account's number to to and fails the test on an error.
func dial(t *testing.T, env Env, to string, o func(*carrier.Dial)) carrier.Call {
	t.Helper()
	d := carrier.Dial{CallID: voice.NewCallID(), To: to, From: ourNumber, PublicURL: env.PublicURL}
	if o != nil {
		o(&d)
	}
	c, err := env.Carrier.Dial(ctxOf(t), d)
	if err != nil {
		t.Fatalf("Dial %s: %v", to, err)
	}
	if c.Ref == "" {
		t.Fatalf("Dial %s returned no call reference: %+v", to, c)
	}
	return c
}

// reach waits until the vendor has call ref at status want (or ended), then returns the
// call as the carrier reports it.
func reach(t *testing.T, env Env, ref string, want carrier.Status) carrier.Call {
	t.Helper()
	ctx := ctxOf(t)
	if err := env.WaitFor(ctx, ref, want); err != nil {
		t.Fatalf("waiting for call %s to be %s: %v", ref, want, err)
	}
	c, err := env.Carrier.Call(ctx, ref)
	if err != nil {
		t.Fatalf("Call %s: %v", ref, err)
	}
	return c
}

// ended waits for the call's end and checks its final status.
func ended(t *testing.T, env Env, ref string, want carrier.Status) carrier.Call {
	t.Helper()
	c := reach(t, env, ref, want)
	if c.Status != want || !c.Status.Ended() {
		t.Errorf("call %s ended %q, want %q", ref, c.Status, want)
	}
	return c
}

// hangUp ends a call the test is done with.
func hangUp(t *testing.T, env Env, ref string) {
	t.Helper()
	if err := env.Carrier.Hangup(ctxOf(t), ref); err != nil {
		t.Errorf("Hangup %s: %v", ref, err)
	}
}

func testName(t *testing.T, newCarrier Factory) {
	if name := newCarrier(t, account(), FaultNone).Carrier.Name(); name == "" {
		t.Error("the carrier has no name for call records")
	}
}

func testDialAnswered(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	placed := dial(t, env, "+1 (555) 010-2000", nil) // written loosely
	if placed.Status.Ended() {
		t.Errorf("a call just placed is already over: %s", placed.Status)
	}
	if placed.To != person || placed.From != ourNumber {
		t.Errorf("placed call is %s -> %s, want %s -> %s", placed.From, placed.To, ourNumber, person)
	}
	c := reach(t, env, placed.Ref, carrier.StatusInProgress)
	if c.Status != carrier.StatusInProgress || c.Ref != placed.Ref {
		t.Errorf("answered call: %+v, want %s in progress", c, placed.Ref)
	}
	hangUp(t, env, c.Ref)
}

func testHangup(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	placed := dial(t, env, person, nil)
	reach(t, env, placed.Ref, carrier.StatusInProgress)
	if err := env.Carrier.Hangup(ctxOf(t), placed.Ref); err != nil {
		t.Fatalf("Hangup: %v", err)
	}
	ended(t, env, placed.Ref, carrier.StatusCompleted)
}

func testHangupEnded(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	placed := dial(t, env, busy, nil)
	ended(t, env, placed.Ref, carrier.StatusBusy)
	if err := env.Carrier.Hangup(ctxOf(t), placed.Ref); err != nil {
		t.Errorf("hanging up a call that is over: %v, want it counted as done", err)
	}
}

func testBusy(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	c := ended(t, env, dial(t, env, busy, nil).Ref, carrier.StatusBusy)
	if c.Duration != 0 {
		t.Errorf("a busy call lasted %v", c.Duration)
	}
}

func testRingTimeout(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	placed := dial(t, env, nobody, func(d *carrier.Dial) { d.RingTimeout = time.Second })
	ended(t, env, placed.Ref, carrier.StatusNoAnswer)
}

func testFailed(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	ended(t, env, dial(t, env, broken, nil).Ref, carrier.StatusFailed)
}

func testMachineDetection(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	for _, policy := range []carrier.MachinePolicy{carrier.MachineHangup, carrier.MachineMessage} {
		for to, wantMachine := range map[string]bool{machine: true, person: false} {
			placed := dial(t, env, to, func(d *carrier.Dial) { d.OnMachine = policy })
			c := reach(t, env, placed.Ref, carrier.StatusInProgress)
			switch {
			case c.AnsweredBy == "":
				t.Errorf("%s, answered with detection on (%s): no verdict", to, policy)
			case c.AnsweredBy.Machine() != wantMachine:
				t.Errorf("%s, answered with detection on (%s): verdict %q, machine %v", to, policy, c.AnsweredBy, wantMachine)
			}
			hangUp(t, env, placed.Ref)
		}
	}
}

func testNoDetection(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	placed := dial(t, env, machine, func(d *carrier.Dial) { d.OnMachine = carrier.MachineTalk })
	if c := reach(t, env, placed.Ref, carrier.StatusInProgress); c.AnsweredBy != "" {
		t.Errorf("a call that talks to machines ran detection anyway: %q", c.AnsweredBy)
	}
	hangUp(t, env, placed.Ref)
}

func testTransfer(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	placed := dial(t, env, person, nil)
	reach(t, env, placed.Ref, carrier.StatusInProgress)
	if err := env.Carrier.Transfer(ctxOf(t), placed.Ref, "+1 555 010 3000", ourNumber); err != nil {
		t.Fatalf("Transfer: %v", err)
	}
	if got := env.TransferredTo(placed.Ref); got != agent {
		t.Errorf("the call was connected to %q, want %s", got, agent)
	}
}

func testTransferEnded(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	placed := dial(t, env, busy, nil)
	ended(t, env, placed.Ref, carrier.StatusBusy)
	err := env.Carrier.Transfer(ctxOf(t), placed.Ref, agent, "")
	if !errors.Is(err, carrier.ErrRejected) || !carrier.Permanent(err) {
		t.Errorf("transferring a call that is over: %v, want it rejected", err)
	}
}

func testFromNotOurs(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	_, err := env.Carrier.Dial(ctxOf(t), carrier.Dial{CallID: voice.NewCallID(), To: person, From: notOurs, PublicURL: env.PublicURL})
	if !errors.Is(err, carrier.ErrRejected) || !carrier.Permanent(err) {
		t.Errorf("calling from a number not on the account: %v, want it rejected", err)
	}
}

func testMalformed(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	ctx := ctxOf(t)
	before := env.Requests()
	for name, err := range map[string]error{
		"Dial to":      second(env.Carrier.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: "call me", From: ourNumber, PublicURL: env.PublicURL})),
		"Dial from":    second(env.Carrier.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: person, From: "555", PublicURL: env.PublicURL})),
		"Dial policy":  second(env.Carrier.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: person, From: ourNumber, PublicURL: env.PublicURL, OnMachine: "sing"})),
		"Dial timeout": second(env.Carrier.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: person, From: ourNumber, PublicURL: env.PublicURL, RingTimeout: -time.Second})),
		"Transfer to":  env.Carrier.Transfer(ctx, "no-such-call", "+1 415 555 0100 ext 2", ""),
		"Number":       second(env.Carrier.Number(ctx, "020 7183 8750")), // no country code
	} {
		if !errors.Is(err, carrier.ErrInvalid) || !carrier.Permanent(err) {
			t.Errorf("%s with malformed input: %v, want it refused as invalid", name, err)
		}
	}
	if n := env.Requests() - before; n != 0 {
		t.Errorf("malformed input reached the carrier: %d requests", n)
	}
}

func second[T any](_ T, err error) error { return err }
