package sip

import (
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"

	"github.com/emiago/sipgo/sip"
	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
)

// A trunk's INVITE as it comes: two proxies on the way, the caller's extras, an SDP offer.
const fullInvite = "INVITE sip:+15550100@198.51.100.7:5060 SIP/2.0\r\n" +
	"Via: SIP/2.0/UDP 203.0.113.2:5060;branch=z9hG4bK-proxy2\r\n" +
	"Via: SIP/2.0/UDP 203.0.113.1:5060;branch=z9hG4bK-proxy1;received=203.0.113.9\r\n" +
	"Record-Route: <sip:203.0.113.2;lr>\r\n" +
	"Record-Route: <sip:203.0.113.1;lr>\r\n" +
	"Max-Forwards: 68\r\n" +
	"From: \"Ada\" <sip:+15550111@203.0.113.1>;tag=caller-tag\r\n" +
	"To: <sip:+15550100@198.51.100.7>\r\n" +
	"Call-ID: keep-test-1@203.0.113.1\r\n" +
	"CSeq: 101 INVITE\r\n" +
	"Contact: <sip:+15550111@203.0.113.1:5060>\r\n" +
	"Allow: INVITE, ACK, BYE, CANCEL, OPTIONS, UPDATE\r\n" +
	"Supported: timer, replaces\r\n" +
	"Session-Expires: 1800;refresher=uac\r\n" +
	"User-Agent: Example PBX 18.4\r\n" +
	"P-Asserted-Identity: <sip:+15550111@203.0.113.1>\r\n" +
	"Content-Type: application/sdp\r\n" +
	"Content-Length: 21\r\n" +
	"\r\n" +
	"v=0\r\no=- 1 1 IN IP4 x\r\n"

// The dialog's copy of the INVITE keeps the headers a dialog reads and nothing else, and
// what is built from it (the dialog id, a 200 OK with its Vias and Record-Routes) is what
// the whole INVITE gives.
func TestDialogKeepsOnlyTheHeadersItReads(t *testing.T) {
	msg, err := sip.ParseMessage([]byte(fullInvite))
	if err != nil {
		t.Fatal(err)
	}
	whole := msg.(*sip.Request)
	kept := whole.Clone()
	keepDialogHeaders(kept)

	var names []string
	for _, h := range kept.Headers() {
		names = append(names, h.Name())
	}
	want := []string{"Via", "Via", "Record-Route", "Record-Route", "From", "To", "Call-ID", "CSeq", "Contact", "Allow"}
	if !slices.Equal(names, want) {
		t.Errorf("kept headers %q, want %q", names, want)
	}
	if len(kept.Body()) != 0 {
		t.Errorf("kept the SDP offer: %q", kept.Body())
	}

	wholeID, _ := sip.DialogIDFromRequestUAS(whole)
	keptID, _ := sip.DialogIDFromRequestUAS(kept)
	if keptID != wholeID {
		t.Errorf("dialog id %q, want %q", keptID, wholeID)
	}
	fromWhole := sip.NewResponseFromRequest(whole, sip.StatusOK, "OK", nil)
	fromKept := sip.NewResponseFromRequest(kept, sip.StatusOK, "OK", nil)
	fromKept.RemoveHeader("To") // each response gets a fresh tag
	fromWhole.RemoveHeader("To")
	if fromKept.String() != fromWhole.String() {
		t.Errorf("a 200 OK from the kept INVITE:\n%s\nfrom the whole one:\n%s", fromKept, fromWhole)
	}
	if !namesTag(kept, "Allow", "", string(sip.UPDATE)) {
		t.Error("the session timer no longer sees that the caller allows UPDATE")
	}
}

// fakeInviteTx is an INVITE server transaction that ends when the test says.
type fakeInviteTx struct {
	ends      *txEnds
	responses []*sip.Response
}

// txEnds is what ends a fakeInviteTx, held apart from it so that a test can end it
// without keeping it.
type txEnds struct {
	done      chan struct{}
	callbacks []sip.FnTxTerminate
}

func (e *txEnds) end(err error) {
	close(e.done)
	for _, f := range e.callbacks {
		f("key", err)
	}
}

func (f *fakeInviteTx) Terminate()            {}
func (f *fakeInviteTx) Done() <-chan struct{} { return f.ends.done }
func (f *fakeInviteTx) Err() error            { return nil }
func (f *fakeInviteTx) Acks() <-chan *sip.Request {
	return nil
}
func (f *fakeInviteTx) OnCancel(sip.FnTxCancel) bool { return true }
func (f *fakeInviteTx) OnTerminate(fn sip.FnTxTerminate) bool {
	f.ends.callbacks = append(f.ends.callbacks, fn)
	return true
}
func (f *fakeInviteTx) Respond(res *sip.Response) error {
	f.responses = append(f.responses, res)
	return nil
}

// A dialog's transaction is passed through while it runs; once it is over, nothing of it
// is held but its end, so the INVITE and the 200 OK it keeps can be collected.
func TestDialogLetsItsTransactionGoOnceOver(t *testing.T) {
	ends := &txEnds{done: make(chan struct{})}
	var r *releasingTx
	var gone weak.Pointer[fakeInviteTx]
	func() {
		tx := &fakeInviteTx{ends: ends}
		gone = weak.Make(tx)
		r = releaseWhenOver(tx)
		if err := r.Respond(sip.NewResponse(sip.StatusRinging, "Ringing")); err != nil || len(tx.responses) != 1 {
			t.Fatalf("a response while the transaction runs: %v, %d sent", err, len(tx.responses))
		}
		if !r.OnCancel(func(*sip.Request) {}) {
			t.Fatal("OnCancel refused while the transaction runs")
		}
	}()
	runtime.GC()
	if gone.Value() == nil {
		t.Fatal("the running transaction was collected: the dialog must hold it")
	}

	why := errors.New("timer L")
	ends.end(why)
	runtime.GC()
	if gone.Value() != nil {
		t.Error("the transaction is still held after it ended")
	}
	select {
	case <-r.Done():
	default:
		t.Error("Done is not closed after the transaction ended")
	}
	if !errors.Is(r.Err(), why) {
		t.Errorf("Err = %v, want %v", r.Err(), why)
	}
	if err := r.Respond(sip.NewResponse(sip.StatusOK, "OK")); !errors.Is(err, sip.ErrTransactionTerminated) {
		t.Errorf("a response after the end: %v, want %v", err, sip.ErrTransactionTerminated)
	}
	if r.OnCancel(func(*sip.Request) {}) || r.OnTerminate(func(string, error) {}) {
		t.Error("callbacks taken after the end")
	}
	r.Terminate() // nothing to end: must not panic
}

// An answered call's dialog keeps only the headers it reads of the INVITE, and still
// hangs up with a BYE the caller takes. A plain call holds no SRTP keys.
func TestAnsweredDialogKeepsLittleOfTheInvite(t *testing.T) {
	a := newAnswering(5)
	tr := startTrunk(t, "127.0.0.0/8", a)
	caller := newCaller(t)
	call, err := caller.Call(t.Context(), tr.Addr(), sipsim.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run := <-a.got
	c := tr.dialogs.byCallID(call.SIPCallID())
	if c == nil {
		t.Fatal("the trunk has no dialog for the call")
	}
	invite := c.dialog.InviteRequest
	if len(invite.Body()) != 0 || invite.GetHeader("Content-Type") != nil {
		t.Errorf("the dialog keeps the offer: %q", invite.Body())
	}
	for _, h := range invite.Headers() {
		if !slices.Contains(dialogHeaders, h.Name()) {
			t.Errorf("the dialog keeps %s", h.Name())
		}
	}
	if len(c.local.Crypto) != 0 {
		t.Errorf("a plain call holds %d SRTP keys", len(c.local.Crypto))
	}
	run.leg.(*Leg).hangUp() // a BYE built from the kept INVITE
	select {
	case <-call.Ended():
	case <-time.After(5 * time.Second):
		t.Fatal("the caller never took the BYE")
	}
}
