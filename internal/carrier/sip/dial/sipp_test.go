package dial

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// Against sipp (Debian's sip-tester) as the callee: each scenario is a trunk's far end
// doing one thing, and sipp counts the call successful only if Handset played its part.
func TestAgainstSipp(t *testing.T) {
	testpeer.Slow(t, "starts sipp")
	for _, tc := range []struct {
		scenario sippeer.Scenario
		opts     sippeer.SippOptions
		play     func(t *testing.T, h *handsetSide, o Options)
	}{
		{sippeer.UASAnswer, sippeer.SippOptions{}, func(t *testing.T, h *handsetSide, o Options) {
			hangUp(t, call(t, h, o))
		}},
		{sippeer.UASDigest, sippeer.SippOptions{Username: "trunkuser", Password: "s3cret"}, func(t *testing.T, h *handsetSide, o Options) {
			o.Username, o.Password = "trunkuser", "s3cret"
			hangUp(t, call(t, h, o))
		}},
		{sippeer.UASAcceptRefer, sippeer.SippOptions{}, func(t *testing.T, h *handsetSide, o Options) {
			d := call(t, h, o)
			ctx, cancel := context.WithTimeout(context.Background(), waitBound)
			defer cancel()
			if err := d.Refer(ctx, sip.Uri{Scheme: "sip", User: "+15550001111", Host: "pbx.example.com"}); err != nil {
				t.Errorf("Refer: %v", err)
			}
			receive(t, d.Done(), "the callee's BYE after the transfer")
			if !d.HungUpByCallee() {
				t.Error("the dialog did not end by the callee's BYE")
			}
		}},
		{sippeer.UASRefuseRefer, sippeer.SippOptions{}, func(t *testing.T, h *handsetSide, o Options) {
			d := call(t, h, o)
			ctx, cancel := context.WithTimeout(context.Background(), waitBound)
			defer cancel()
			var ce *CallError
			if err := d.Refer(ctx, sip.Uri{Scheme: "sip", User: "+15550001111", Host: "pbx.example.com"}); !errors.Is(err, ErrRefused) ||
				!errors.As(err, &ce) || ce.Status != 603 {
				t.Errorf("Refer: %v, want ErrRefused 603", err)
			}
			hangUp(t, d)
		}},
		{sippeer.UASRing, sippeer.SippOptions{}, func(t *testing.T, h *handsetSide, o Options) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o.OnProvisional = func(status int) {
				if status == 180 {
					cancel()
				}
			}
			var ce *CallError
			if _, err := Invite(ctx, h.Client, o); !errors.Is(err, ErrCancelled) || !errors.As(err, &ce) || ce.Status != 487 {
				t.Errorf("Invite cancelled while ringing: %v, want ErrCancelled 487", err)
			}
		}},
	} {
		t.Run(string(tc.scenario), func(t *testing.T) {
			s, err := sippeer.StartSipp(t, tc.scenario, "", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			callee, err := netip.ParseAddrPort(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			h := newHandset(t)
			o := Options{
				Dialogs: h.dialogs,
				Target:  sip.Uri{Scheme: "sip", User: "+15551234567", Host: callee.Addr().String(), Port: int(callee.Port())},
				From:    "+15557654321",
				Contact: sip.ContactHeader{Address: h.URI("handset")},
				Offer:   []byte(offerSDP),
			}
			tc.play(t, h, o)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := s.Wait(ctx)
			if err != nil || res.Successful != 1 || res.Failed != 0 {
				t.Errorf("sipp: %v, %d successful and %d failed calls, want 1 and 0\n%s\n%s", err, res.Successful, res.Failed, res.Errors, res.Messages)
			}
		})
	}
}

func call(t *testing.T, h *handsetSide, o Options) *Dialog {
	t.Helper()
	d, err := invite(t, h, o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func hangUp(t *testing.T, d *Dialog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if err := d.Bye(ctx); err != nil {
		t.Errorf("Bye: %v", err)
	}
}
