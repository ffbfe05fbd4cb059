package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// renamed is a carrier's control under another name: two fake accounts stand for two
// carriers, each reached over its own wire.
type renamed struct {
	carrier.Carrier
	name string
}

func (r renamed) Name() string { return r.name }

// twoCarriers are two carriers, "east" and "west", each with its own fake account.
func twoCarriers(t *testing.T) (east, west *faketwilio.Server, dialers map[string]carrier.Carrier) {
	t.Helper()
	nobody := func(string) faketwilio.Answer { return faketwilio.Answer{Outcome: faketwilio.OutcomeNoAnswer} }
	east, eastREST := twilioFake(t, nobody)
	west, westREST := twilioFake(t, nobody)
	return east, west, map[string]carrier.Carrier{
		"east": renamed{eastREST, "east"},
		"west": renamed{westREST, "west"},
	}
}

// A call job naming a configured carrier is placed through it, recorded as its call and
// followed through it; one naming no configured carrier goes through the default.
func TestCallJobGoesThroughItsCarrier(t *testing.T) {
	st := openStore(t)
	east, west, dialers := twoCarriers(t)
	calls := &Calls{Store: st, Dialer: dialers["east"], Dialers: dialers, PublicURL: "http://127.0.0.1:9", From: ourLine,
		Poll: 10 * time.Millisecond}
	r := idleRunner(t, st, "node-a")
	for _, tt := range []struct {
		name, carrier, want string
		east, west          int // calls each account has placed after the job
	}{
		{"named", "west", "west", 0, 1},
		{"default", "", "east", 1, 1},
		{"not configured", "north", "east", 2, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := CallJob{To: "+15550102000", Carrier: tt.carrier}
			l := claimed(t, st, r, job)
			var p callProgress
			if err := calls.place(context.Background(), l, job, &p, calls.log()); err != nil {
				t.Fatal(err)
			}
			if len(east.Calls()) != tt.east || len(west.Calls()) != tt.west {
				t.Errorf("calls placed: east %d, west %d; want %d, %d", len(east.Calls()), len(west.Calls()), tt.east, tt.west)
			}
			rec, err := st.Call(context.Background(), p.CallID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Carrier != tt.want || p.Carrier != tt.want {
				t.Errorf("recorded carrier %q, checkpoint %q; want %q", rec.Carrier, p.Carrier, tt.want)
			}
			// followed through the carrier that has it: its account knows the call
			info, err := calls.dialer(p.Carrier).Call(context.Background(), p.SID)
			if err != nil || info.Ref != p.SID {
				t.Errorf("the placing carrier does not know its call %s: %+v %v", p.SID, info, err)
			}
		})
	}
}

// A callback goes to the person through the carrier they called on.
func TestDeliveryCallsBackThroughTheCallersCarrier(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	const hash = "caller-hash-west"
	now := time.Now()
	if err := st.StartCall(ctx, store.Call{ID: "c_west", Carrier: "west", Direction: voice.Inbound, From: "+15550107000",
		To: ourLine, CallerHash: hash, StartedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TouchSession(ctx, hash, "session-west", "c_west", now); err != nil {
		t.Fatal(err)
	}
	can := ChannelFunc(func() error { return nil })
	job, err := PlanDelivery(ctx, st, map[string]Channel{"east": can, "west": can}, DeliverRequest{CallerHash: hash, Message: "Your order shipped."})
	if err != nil {
		t.Fatal(err)
	}
	if job.Carrier != "west" || job.To != "+15550107000" {
		t.Errorf("the callback goes to %s through %q, want +15550107000 through west", job.To, job.Carrier)
	}

	// the caller's carrier cannot call back: the delivery says why
	cannot := ChannelFunc(func() error { return errors.New("set WEST_KEY") })
	_, err = PlanDelivery(ctx, st, map[string]Channel{"east": can, "west": cannot}, DeliverRequest{CallerHash: hash, Message: "Hi."})
	if !errors.Is(err, ErrCannotDeliver) || !strings.Contains(err.Error(), "west: set WEST_KEY") {
		t.Errorf("an unreachable carrier: %v", err)
	}
}

// A transfer goes through the call's own carrier; a carrier without an account is refused
// in that carrier's words.
func TestTransferGoesThroughTheCallsCarrier(t *testing.T) {
	_, _, dialers := twoCarriers(t)
	tr := &Transfers{Carriers: dialers, NoAccount: func(name string) string {
		if name == "north" {
			return "set NORTH_ID and NORTH_TOKEN"
		}
		return ""
	}}
	for _, name := range []string{"east", "west"} {
		c, err := tr.carrierOf(voice.LegInfo{Carrier: name, CarrierRef: "CA1"})
		if err != nil || c.Name() != name {
			t.Errorf("a %s call transfers through %v (%v)", name, c, err)
		}
	}
	for _, tt := range []struct {
		info voice.LegInfo
		want string
	}{
		{voice.LegInfo{Carrier: "north", CarrierRef: "N1"}, "refused: transfers of north calls need its REST API: set NORTH_ID and NORTH_TOKEN"},
		{voice.LegInfo{Carrier: "browser"}, "refused: a browser call cannot be transferred"},
		{voice.LegInfo{Carrier: "pigeon", CarrierRef: "P1"}, "refused: a pigeon call cannot be transferred"},
	} {
		c, err := tr.carrierOf(tt.info)
		if c != nil || err == nil || err.Error() != tt.want || !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v %v, want %q", tt.info.Carrier, c, err, tt.want)
		}
	}
}
