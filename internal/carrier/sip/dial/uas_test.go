package dial

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/carrier/sip/dial/uatest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(uatest.IgnoreSipgoLeak))
}

// waitBound is how long a test waits for something that should happen at once.
const waitBound = 10 * time.Second

const (
	fakeRealm = "trunk.test"
	fakeNonce = "tr0nce"
	answerSDP = "v=0\r\no=callee 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n"
	offerSDP  = "v=0\r\no=handset 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 30000 RTP/AVP 0\r\n"
)

// fakeUAS is the callee's side of a trunk, written for the tests: it answers each INVITE
// as answer says, keeps the dialogs it answers, and records what Handset sent.
type fakeUAS struct {
	*uatest.Endpoint

	// mu guards the fields a test sets after the server started, and the INVITEs seen.
	mu      sync.Mutex
	dialogs *sipgo.DialogServerCache
	// answer plays the callee's part for one INVITE: respond through dlg (provisional and
	// final responses); it runs on the server's handler goroutine.
	answer func(req *sip.Request, dlg *sipgo.DialogServerSession)
	// refer answers a REFER; the test's dialog is passed to send NOTIFYs with.
	refer func(req *sip.Request, tx sip.ServerTransaction)

	invites  []*sip.Request
	acked    chan *sip.Request
	byes     chan *sip.Request
	cancels  chan *sip.Request
	answered chan *sipgo.DialogServerSession
	ringing  chan *sipgo.DialogServerSession
}

func newFakeUAS(t *testing.T) *fakeUAS {
	u := &fakeUAS{acked: make(chan *sip.Request, 8), byes: make(chan *sip.Request, 8), cancels: make(chan *sip.Request, 8),
		answered: make(chan *sipgo.DialogServerSession, 8), ringing: make(chan *sipgo.DialogServerSession, 8)}
	u.Endpoint = uatest.New(t, func(srv *sipgo.Server) {
		srv.OnInvite(u.onInvite)
		srv.OnAck(func(req *sip.Request, tx sip.ServerTransaction) {
			_ = u.cache().ReadAck(req, tx)
			u.acked <- req
		})
		srv.OnBye(func(req *sip.Request, tx sip.ServerTransaction) {
			if err := u.cache().ReadBye(req, tx); err != nil {
				_ = tx.Respond(sip.NewResponseFromRequest(req, 481, "No Such Call", nil))
			}
			u.byes <- req
		})
		srv.OnCancel(func(req *sip.Request, tx sip.ServerTransaction) { u.cancels <- req })
		srv.OnRefer(func(req *sip.Request, tx sip.ServerTransaction) {
			u.mu.Lock()
			refer := u.refer
			u.mu.Unlock()
			if refer == nil {
				_ = tx.Respond(sip.NewResponseFromRequest(req, 405, "Method Not Allowed", nil))
				return
			}
			refer(req, tx)
		})
	})
	u.set(func(u *fakeUAS) {
		u.dialogs = sipgo.NewDialogServerCache(u.Client, sip.ContactHeader{Address: u.URI("callee")})
	})
	return u
}

// set changes what the callee does, under its lock.
func (u *fakeUAS) set(f func(u *fakeUAS)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	f(u)
}

func (u *fakeUAS) cache() *sipgo.DialogServerCache {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.dialogs
}

func (u *fakeUAS) onInvite(req *sip.Request, tx sip.ServerTransaction) {
	u.mu.Lock()
	u.invites = append(u.invites, req)
	answer := u.answer
	u.mu.Unlock()
	dlg, err := u.cache().ReadInvite(req, tx)
	if err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 400, err.Error(), nil))
		return
	}
	answer(req, dlg)
}

func (u *fakeUAS) invitesSeen() []*sip.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*sip.Request(nil), u.invites...)
}

// pickUp answers 180 then 200 with the SDP answer.
func pickUp(u *fakeUAS) func(*sip.Request, *sipgo.DialogServerSession) {
	return pickUpAfter(u, nil)
}

// pickUpAfter answers 180, then 200 once heard is closed (when not nil): UDP does not keep
// two datagrams sent back to back in order.
func pickUpAfter(u *fakeUAS, heard <-chan struct{}) func(*sip.Request, *sipgo.DialogServerSession) {
	return func(_ *sip.Request, dlg *sipgo.DialogServerSession) {
		_ = dlg.Respond(180, "Ringing", nil)
		if heard != nil {
			select {
			case <-heard:
			case <-time.After(waitBound):
			}
		}
		_ = dlg.Respond(200, "OK", []byte(answerSDP), sip.NewHeader("Content-Type", "application/sdp"))
		u.answered <- dlg
	}
}

// refuse answers 180 then the final status.
func refuse(status int, reason string) func(*sip.Request, *sipgo.DialogServerSession) {
	return func(_ *sip.Request, dlg *sipgo.DialogServerSession) {
		_ = dlg.Respond(180, "Ringing", nil)
		_ = dlg.Respond(status, reason, nil)
	}
}

// ring answers 180 and never more: the call is cancelled. It holds the handler until then,
// for the server ends a transaction whose handler returns without a final response.
func (u *fakeUAS) ring(_ *sip.Request, dlg *sipgo.DialogServerSession) {
	_ = dlg.Respond(180, "Ringing", nil)
	u.ringing <- dlg
	select {
	case <-dlg.Context().Done():
	case <-time.After(waitBound):
	}
}

// handsetSide is Handset's user agent for a test: its client, and its server handing the
// requests inside its dialogs to Dialogs, as the trunk does.
type handsetSide struct {
	*uatest.Endpoint
	dialogs *Dialogs
	strays  chan *sip.Request // requests Dialogs did not take
}

func newHandset(t *testing.T) *handsetSide {
	h := &handsetSide{dialogs: NewDialogs(), strays: make(chan *sip.Request, 8)}
	route := func(req *sip.Request, tx sip.ServerTransaction) {
		if !h.dialogs.Handle(req, tx) {
			h.strays <- req
			if !req.IsAck() {
				_ = tx.Respond(sip.NewResponseFromRequest(req, 481, "Call/Transaction Does Not Exist", nil))
			}
		}
	}
	h.Endpoint = uatest.New(t, func(srv *sipgo.Server) {
		for _, m := range []sip.RequestMethod{sip.INVITE, sip.ACK, sip.BYE, sip.NOTIFY, sip.INFO, sip.OPTIONS} {
			srv.OnRequest(m, route)
		}
	})
	return h
}

func (h *handsetSide) options(u *fakeUAS, user string) Options {
	return Options{
		Dialogs: h.dialogs,
		Target:  sip.Uri{Scheme: "sip", User: user, Host: "127.0.0.1", Port: u.Addr.Port},
		From:    "+15557654321",
		Contact: sip.ContactHeader{Address: h.URI("handset")},
		Offer:   []byte(offerSDP),
	}
}

// acceptRefer is a REFER handler that answers 202 then reports the new call's progress
// in a NOTIFY for each sipfrag (the last one ending the subscription), noting the
// answers to them in notified when set. The NOTIFYs are sent before the test ends.
func (u *fakeUAS) acceptRefer(t *testing.T, progress []string, notified chan<- int) func(*sip.Request, sip.ServerTransaction) {
	var notifying sync.WaitGroup
	t.Cleanup(notifying.Wait)
	return func(req *sip.Request, tx sip.ServerTransaction) {
		dlg, err := u.cache().MatchDialogRequest(req)
		if err != nil {
			_ = tx.Respond(sip.NewResponseFromRequest(req, 481, "No Such Call", nil))
			return
		}
		_ = tx.Respond(sip.NewResponseFromRequest(req, 202, "Accepted", nil))
		notifying.Add(1)
		go func() {
			defer notifying.Done()
			for i, frag := range progress {
				state := "active"
				if i == len(progress)-1 {
					state = "terminated;reason=noresource"
				}
				code, err := notify(dlg, frag, state)
				if err != nil {
					t.Error(err)
				}
				if notified != nil {
					notified <- code
				}
			}
		}()
	}
}

// notify sends a NOTIFY reporting a transfer's progress inside dlg.
func notify(dlg *sipgo.DialogServerSession, sipfrag string, state string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	req := sip.NewRequest(sip.NOTIFY, dlg.InviteRequest.Contact().Address)
	req.AppendHeader(sip.NewHeader("Event", "refer"))
	req.AppendHeader(sip.NewHeader("Subscription-State", state))
	req.AppendHeader(sip.NewHeader("Content-Type", "message/sipfrag"))
	req.SetBody([]byte(sipfrag))
	res, err := dlg.Do(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("NOTIFY: %w", err)
	}
	return res.StatusCode, nil
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitBound):
		t.Fatalf("no %s", what)
		var zero T
		return zero
	}
}
