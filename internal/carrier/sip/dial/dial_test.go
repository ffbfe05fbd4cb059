package dial

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/dial/uatest"
)

func invite(t *testing.T, h *handsetSide, o Options) (*Dialog, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	return Invite(ctx, h.Client, o)
}

// answeredCall places a call the callee picks up at once, and waits for its ACK.
func answeredCall(t *testing.T, u *fakeUAS, h *handsetSide) *Dialog {
	t.Helper()
	u.set(func(u *fakeUAS) { u.answer = pickUp(u) })
	d, err := invite(t, h, h.options(u, "+15551234567"))
	if err != nil {
		t.Fatal(err)
	}
	receive(t, u.acked, "ACK")
	return d
}

// An answered call: progress reported, the INVITE says who calls whom with the offer, the
// answer comes back, the callee gets its ACK; then the callee hangs up and the dialog ends.
func TestAnsweredThenCalleeHangsUp(t *testing.T) {
	u, h := newFakeUAS(t), newHandset(t)
	heard := make(chan struct{})
	u.set(func(u *fakeUAS) { u.answer = pickUpAfter(u, heard) })
	var progress []int
	o := h.options(u, "+15551234567")
	o.OnProvisional = func(status int) {
		progress = append(progress, status)
		if status == 180 {
			close(heard)
		}
	}
	d, err := invite(t, h, o)
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Answer()) != answerSDP || !slices.Equal(progress, []int{180}) {
		t.Errorf("answer %q, progress %v: want the callee's SDP and [180]", d.Answer(), progress)
	}
	inv := u.invitesSeen()[0]
	if inv.From().Address.User != "+15557654321" || inv.To().Address.User != "+15551234567" || string(inv.Body()) != offerSDP ||
		inv.GetHeader("Content-Type").Value() != "application/sdp" {
		t.Errorf("INVITE from %s to %s with %q: want the caller id, the callee and the SDP offer",
			inv.From().Address.String(), inv.To().Address.String(), inv.Body())
	}
	receive(t, u.acked, "ACK of the 200")
	if h.dialogs.Len() != 1 {
		t.Errorf("%d dialogs kept, want 1", h.dialogs.Len())
	}

	dlg := receive(t, u.answered, "answered dialog")
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if err := dlg.Bye(ctx); err != nil {
		t.Fatalf("the callee's BYE: %v", err)
	}
	receive(t, d.Done(), "end of the dialog")
	if !d.HungUpByCallee() || h.dialogs.Len() != 0 {
		t.Errorf("after the callee's BYE: by callee %v, %d dialogs kept; want true and none", d.HungUpByCallee(), h.dialogs.Len())
	}
	if err := d.Bye(ctx); err != nil {
		t.Errorf("Bye after the callee hung up: %v, want nil", err)
	}
	if err := d.Refer(ctx, sip.Uri{Scheme: "sip", User: "x", Host: "example.com"}); !errors.Is(err, ErrEnded) {
		t.Errorf("Refer after the end: %v, want ErrEnded", err)
	}
}

// Handset hangs up: BYE reaches the callee and the dialog ends.
func TestHandsetHangsUp(t *testing.T) {
	u, h := newFakeUAS(t), newHandset(t)
	d := answeredCall(t, u, h)
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if err := d.Bye(ctx); err != nil {
		t.Fatal(err)
	}
	receive(t, u.byes, "BYE at the callee")
	receive(t, d.Done(), "end of the dialog")
	if d.HungUpByCallee() || h.dialogs.Len() != 0 {
		t.Errorf("by callee %v, %d dialogs kept: want false and none", d.HungUpByCallee(), h.dialogs.Len())
	}
}

// Each final failure says why the call did not connect.
func TestFailuresSayWhy(t *testing.T) {
	for _, tc := range []struct {
		status int
		kind   error
	}{
		{486, ErrBusy}, {600, ErrBusy}, {480, ErrNoAnswer}, {408, ErrNoAnswer}, {404, ErrInvalidNumber},
		{484, ErrInvalidNumber}, {604, ErrInvalidNumber}, {403, ErrRefused}, {603, ErrRefused}, {503, ErrUnreachable},
	} {
		u, h := newFakeUAS(t), newHandset(t)
		u.set(func(u *fakeUAS) { u.answer = refuse(tc.status, "Because") })
		d, err := invite(t, h, h.options(u, "+15551234567"))
		var ce *CallError
		if d != nil || !errors.Is(err, tc.kind) || !errors.As(err, &ce) || ce.Status != tc.status {
			t.Errorf("%d: dialog %v, error %v; want none and %v with the status", tc.status, d, err, tc.kind)
		}
		if h.dialogs.Len() != 0 {
			t.Errorf("%d: a failed call left a dialog", tc.status)
		}
	}
}

// The trunk's proxy challenges (407): the right password is answered and the call goes
// through; a wrong one, challenged again, is ErrCredentials.
func TestDigestChallenge(t *testing.T) {
	for _, tc := range []struct {
		password string
		invites  int
		kind     error
	}{{"s3cret", 2, nil}, {"guess", 3, ErrCredentials}} {
		u, h := newFakeUAS(t), newHandset(t)
		answered := pickUp(u)
		digest := func(req *sip.Request, dlg *sipgo.DialogServerSession) {
			auth := req.GetHeader("Proxy-Authorization")
			if auth == nil || !uatest.ValidDigest(auth.Value(), "INVITE", "trunkuser", "s3cret", fakeRealm, fakeNonce) {
				_ = dlg.Respond(407, "Proxy Authentication Required", nil, sip.NewHeader("Proxy-Authenticate",
					`Digest realm="`+fakeRealm+`", nonce="`+fakeNonce+`", algorithm=MD5`))
				return
			}
			answered(req, dlg)
		}
		u.set(func(u *fakeUAS) { u.answer = digest })
		o := h.options(u, "+15551234567")
		o.Username, o.Password = "trunkuser", tc.password
		d, err := invite(t, h, o)
		if tc.kind == nil && err != nil || tc.kind != nil && !errors.Is(err, tc.kind) {
			t.Errorf("password %q: %v, want %v", tc.password, err, tc.kind)
		}
		if n := len(u.invitesSeen()); n != tc.invites {
			t.Errorf("password %q: %d INVITEs, want %d", tc.password, n, tc.invites)
		}
		if d != nil {
			ctx, cancel := context.WithTimeout(context.Background(), waitBound)
			_ = d.Bye(ctx)
			cancel()
		}
	}
}

// Nobody answers within RingTimeout: the call is cancelled and fails with ErrNoAnswer.
func TestRingTimeoutCancels(t *testing.T) {
	u, h := newFakeUAS(t), newHandset(t)
	u.set(func(u *fakeUAS) { u.answer = u.ring })
	o := h.options(u, "+15551234567")
	o.RingTimeout = 300 * time.Millisecond
	_, err := invite(t, h, o)
	if !errors.Is(err, ErrNoAnswer) {
		t.Errorf("%v, want ErrNoAnswer", err)
	}
	dlg := receive(t, u.ringing, "ringing dialog")
	receive(t, dlg.Context().Done(), "CANCEL at the callee")
	if cause := context.Cause(dlg.Context()); !errors.Is(cause, sip.ErrTransactionCanceled) {
		t.Errorf("the callee's INVITE ended with %v, want it cancelled", cause)
	}
}

// Handset gives up while the phone rings: CANCEL, the trunk's 487, ErrCancelled.
func TestCancelWhileRinging(t *testing.T) {
	u, h := newFakeUAS(t), newHandset(t)
	u.set(func(u *fakeUAS) { u.answer = u.ring })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := h.options(u, "+15551234567")
	o.OnProvisional = func(int) { cancel() }
	_, err := Invite(ctx, h.Client, o)
	var ce *CallError
	if !errors.Is(err, ErrCancelled) || !errors.As(err, &ce) || ce.Status != 487 {
		t.Errorf("%v, want ErrCancelled with the 487", err)
	}
	dlg := receive(t, u.ringing, "ringing dialog")
	receive(t, dlg.Context().Done(), "CANCEL at the callee")
}

// A blind transfer: REFER accepted, NOTIFYs report the new call ringing then answered.
// A callee that refuses REFER, or whose new call fails, is an error saying why.
func TestRefer(t *testing.T) {
	target := sip.Uri{Scheme: "sip", User: "+15550001111", Host: "pbx.example.com"}
	for _, tc := range []struct {
		name     string
		refuse   int      // the REFER's answer when not 202
		progress []string // the NOTIFY bodies after a 202
		kind     error
		status   int
	}{
		{"accepted", 0, []string{"SIP/2.0 100 Trying\r\n", "SIP/2.0 180 Ringing\r\n", "SIP/2.0 200 OK\r\n"}, nil, 0},
		{"not allowed", 405, nil, ErrRefused, 405},
		{"declined", 603, nil, ErrRefused, 603},
		{"new call busy", 0, []string{"SIP/2.0 100 Trying\r\n", "SIP/2.0 486 Busy Here\r\n"}, ErrBusy, 486},
		{"new call declined", 0, []string{"SIP/2.0 603 Decline\r\n"}, ErrRefused, 603},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, h := newFakeUAS(t), newHandset(t)
			referTo := make(chan string, 1)
			notified := make(chan int, len(tc.progress))
			accept := u.acceptRefer(t, tc.progress, notified)
			u.set(func(u *fakeUAS) {
				u.refer = func(req *sip.Request, tx sip.ServerTransaction) {
					referTo <- req.GetHeader("Refer-To").Value()
					if tc.refuse != 0 {
						_ = tx.Respond(sip.NewResponseFromRequest(req, tc.refuse, "No", nil))
						return
					}
					accept(req, tx)
				}
			})
			d := answeredCall(t, u, h)
			ctx, cancel := context.WithTimeout(context.Background(), waitBound)
			defer cancel()
			err := d.Refer(ctx, target)
			var ce *CallError
			switch {
			case tc.kind == nil && err != nil:
				t.Errorf("Refer: %v", err)
			case tc.kind != nil && (!errors.Is(err, tc.kind) || !errors.As(err, &ce) || ce.Status != tc.status):
				t.Errorf("Refer: %v, want %v with status %d", err, tc.kind, tc.status)
			}
			if refused := errors.Is(err, ErrReferRefused); refused != (tc.refuse != 0) {
				t.Errorf("Refer: %v; the REFER itself refused: %v, want %v", err, refused, tc.refuse != 0)
			}
			if got := receive(t, referTo, "REFER"); got != "<"+target.String()+">" {
				t.Errorf("Refer-To %q, want <%s>", got, target.String())
			}
			for range tc.progress {
				if code := receive(t, notified, "NOTIFY answer"); code != 200 {
					t.Errorf("a NOTIFY was answered %d, want 200", code)
				}
			}
			_ = d.Bye(ctx)
		})
	}
}

// Inside the dialog: a session-refresh re-INVITE is answered with Handset's SDP, OPTIONS
// 200, a NOTIFY of another event 489, what no one handles 501; after the end the same
// requests are not the package's to answer.
func TestInDialogRequests(t *testing.T) {
	u, h := newFakeUAS(t), newHandset(t)
	d := answeredCall(t, u, h)
	dlg := receive(t, u.answered, "answered dialog")
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	send := func(method sip.RequestMethod, headers ...sip.Header) *sip.Response {
		req := sip.NewRequest(method, dlg.InviteRequest.Contact().Address)
		for _, hd := range headers {
			req.AppendHeader(hd)
		}
		res, err := dlg.Do(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return res
	}
	if res := send(sip.INVITE); res.StatusCode != 200 || string(res.Body()) != offerSDP {
		t.Errorf("re-INVITE answered %d with %q, want 200 with Handset's SDP", res.StatusCode, res.Body())
	}
	if res := send(sip.OPTIONS); res.StatusCode != 200 {
		t.Errorf("OPTIONS answered %d, want 200", res.StatusCode)
	}
	if res := send(sip.NOTIFY, sip.NewHeader("Event", "dialog")); res.StatusCode != 489 {
		t.Errorf("NOTIFY of another event answered %d, want 489", res.StatusCode)
	}
	if res := send(sip.INFO); res.StatusCode != 501 {
		t.Errorf("INFO answered %d, want 501", res.StatusCode)
	}
	if err := d.Bye(ctx); err != nil {
		t.Fatal(err)
	}
	if res := send(sip.OPTIONS); res.StatusCode != 481 {
		t.Errorf("OPTIONS after the end answered %d, want the trunk's 481", res.StatusCode)
	}
	receive(t, h.strays, "request left to the trunk")
}
