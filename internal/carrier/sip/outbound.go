package sip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/sip/dial"
	"github.com/handset-voice/handset/internal/carrier/sip/media"
	"github.com/handset-voice/handset/internal/carrier/sip/sdp"
	"github.com/handset-voice/handset/internal/voice"
)

// Outbound calls go through the trunk (HANDSET_SIP_TRUNK, else the registrar): an
// INVITE to sip:<number>@<trunk host> with digest credentials, progress reported to the
// gateway as a webhook carrier's are, and once answered a leg the call engine runs like
// any other. A call's reference is Handset's own id of it: Handset is the SIP user agent.

// placed is one outbound call the trunk placed, by reference.
type placed struct {
	mu       sync.Mutex
	call     carrier.Call
	cancel   context.CancelFunc // ends the INVITE (CANCEL) before the answer
	leg      *Leg               // once answered
	dialog   *dial.Dialog       // once answered
	answered time.Time
}

// place starts calling d.To and returns at once; the call's progress goes to the
// gateway's OnProgress.
func (t *Trunk) place(d carrier.Dial) (carrier.Call, error) {
	to, err := carrier.NormalizeNumber(d.To)
	if err != nil {
		return carrier.Call{}, carrier.Classify(carrier.ErrInvalid, err)
	}
	from, err := carrier.NormalizeNumber(d.From)
	if err != nil {
		return carrier.Call{}, carrier.Classify(carrier.ErrInvalid, fmt.Errorf("the caller id: %w", err))
	}
	target := t.outboundTarget()
	if target == nil {
		return carrier.Call{}, carrier.Classify(carrier.ErrInvalid,
			fmt.Errorf("outbound SIP calls need %s (or %s): where they are sent", SettingTrunk, SettingRegistrar))
	}
	ref := string(d.CallID)
	if ref == "" {
		ref = string(voice.NewCallID())
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &placed{call: carrier.Call{Ref: ref, To: to, From: from, Status: carrier.StatusQueued}, cancel: cancel}
	t.placedMu.Lock()
	if _, dup := t.placed[ref]; dup {
		t.placedMu.Unlock()
		cancel()
		return carrier.Call{}, carrier.Classify(carrier.ErrInvalid, fmt.Errorf("call %s was placed already", ref))
	}
	t.placed[ref] = p
	t.placedMu.Unlock()
	uri := *target
	uri.User = to
	queued := p.call // before ring changes it
	go t.ring(ctx, p, d, uri)
	return queued, nil
}

// outboundTarget is where outbound calls go: the trunk, else the registrar; nil when
// neither is set.
func (t *Trunk) outboundTarget() *sip.Uri {
	if t.opts.Trunk != nil {
		return t.opts.Trunk
	}
	return t.opts.Registrar
}

// ring places the INVITE and follows the call to its end.
func (t *Trunk) ring(ctx context.Context, p *placed, d carrier.Dial, target sip.Uri) {
	defer p.cancel()
	ref, from, to := p.call.Ref, p.call.From, p.call.To // set once by place
	// An ended call stays known for a while (Call reports how it ended), then is forgotten.
	defer time.AfterFunc(keepEnded, func() {
		t.placedMu.Lock()
		delete(t.placed, ref)
		t.placedMu.Unlock()
	})
	progress := func(status carrier.Status, duration time.Duration) {
		p.mu.Lock()
		p.call.Status, p.call.Duration = status, duration
		p.mu.Unlock()
		if t.in.OnProgress != nil {
			t.in.OnProgress(carrier.Progress{CallID: d.CallID, Ref: ref, Status: status, Duration: duration})
		}
	}
	sig := &signals{}
	timer := t.newPlacedTimer(sig)
	defer timer.timer.stop()
	dlg, sess, codec, err := t.connect(ctx, invitation{target: target, from: from, ringTimeout: d.RingTimeout,
		sig: sig, inviting: func() { progress(carrier.StatusRinging, 0) }, log: t.log.With("call", d.CallID), timer: timer})
	if err != nil {
		t.log.Info("outbound call not connected", "call", d.CallID, "err", err)
		progress(dialStatus(err), 0)
		return
	}
	info := voice.LegInfo{CallID: d.CallID, Carrier: Name, CarrierRef: ref, Direction: voice.Outbound,
		From: from, To: to, Format: codec.Format}
	leg := legOf(t.log, sess, info, sig, dlg.Bye, func() {})
	sess.Start()
	answered := time.Now()
	p.mu.Lock()
	p.leg, p.dialog, p.answered = leg, dlg, answered
	p.mu.Unlock()
	done, err := t.in.Admit(leg)
	if err != nil {
		_ = sess.Close()
		t.log.Warn("hung up an answered call the gateway refused", "call", d.CallID, "err", err)
		_ = dlg.Bye(context.Background())
		progress(carrier.StatusFailed, 0)
		return
	}
	progress(carrier.StatusInProgress, 0)
	leg.established()
	timer.answered(dlg, func(reason string, cause error) {
		sig.signal(time.Now(), "BYE", "out", reason)
		bctx, cancel := context.WithTimeout(context.Background(), byeTimeout)
		defer cancel()
		if err := dlg.Bye(bctx); err != nil {
			t.log.Warn("could not hang up the call (BYE)", "call", d.CallID, "err", err)
		}
		leg.end(cause)
	})
	select {
	case <-dlg.Done(): // the callee hung up
		if dlg.HungUpByCallee() {
			sig.signal(time.Now(), "BYE", "in", "callee")
		}
		leg.end(nil)
		<-done
	case <-done: // the call ended on Handset's side: the leg sent its BYE
	}
	progress(carrier.StatusCompleted, time.Since(answered).Truncate(time.Second))
}

// invitation is one INVITE Handset places through the trunk.
type invitation struct {
	target      sip.Uri
	from        string // the caller id's user part
	ringTimeout time.Duration
	sig         *signals // the messages go to this call's journal...
	why         string   // ...with this reason ("bridge": a transfer's second leg)
	inviting    func()   // called as the INVITE leaves
	log         *slog.Logger
	timer       *placedTimer // offers a session timer and takes the far end's refreshes; nil: none
}

// connect places inv's INVITE with an offer of the trunk's codecs on a fresh media port,
// and returns the answered dialog (ACK sent) and its media session, not started. A dial
// error (*dial.CallError) says why an INVITE was not answered; an answer whose SDP Handset
// cannot use is hung up.
func (t *Trunk) connect(ctx context.Context, inv invitation) (*dial.Dialog, *media.Session, media.Codec, error) {
	conn, err := t.ports.Listen()
	if err != nil {
		return nil, nil, media.Codec{}, fmt.Errorf("no RTP port: %w", err)
	}
	local := sdp.Local{
		Addr:   netip.AddrPortFrom(t.addr.Addr(), uint16(conn.LocalAddr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port())),
		Codecs: t.opts.Codecs, DTMF: dtmfPayloadType, SessionID: randomID(), Version: 1,
		Crypto: t.offerKeys(),
	}
	offer, err := sdp.Offer(local)
	if err != nil {
		_ = conn.Close()
		return nil, nil, media.Codec{}, err
	}
	inv.sig.signal(time.Now(), "INVITE", "out", inv.why)
	inv.inviting()
	opts := dial.Options{
		Dialogs: t.outDialogs, Target: inv.target, From: inv.from, Contact: t.contactOver(targetTransport(inv.target)), Offer: offer,
		Username: t.opts.Username, Password: t.opts.Password, RingTimeout: inv.ringTimeout,
		OnProvisional: func(status int) { inv.sig.signal(time.Now(), fmt.Sprintf("%d", status), "in", inv.why) },
	}
	if inv.timer != nil {
		asked := t.opts.sessionExpires()
		opts.Headers, opts.OnRefresh = inv.timer.inviteHeaders(asked), inv.timer.onRefresh
		opts.OnTooBrief = func(minSE time.Duration) ([]sip.Header, bool) {
			// The far end asks for a longer session (RFC 4028 422): once more with its floor.
			inv.sig.signal(time.Now(), "422", "in", "session interval too small")
			if minSE <= asked {
				return nil, false
			}
			inv.sig.signal(time.Now(), "INVITE", "out", inv.why)
			return inv.timer.inviteHeaders(minSE), true
		}
	}
	dlg, err := dial.Invite(ctx, t.clientFor(targetTransport(inv.target)), opts)
	if err != nil {
		_ = conn.Close()
		return nil, nil, media.Codec{}, err
	}
	inv.sig.signal(time.Now(), "200 OK", "in", inv.why)
	agreed, err := sdp.ParseAnswer(dlg.Answer(), local)
	var codec media.Codec
	if err == nil {
		var ok bool
		if codec, ok = mediaCodec(agreed.Codec()); !ok {
			err = fmt.Errorf("the answer chose %s", agreed.Codec().Name)
		}
	}
	var keys media.SRTP
	if err == nil {
		keys, err = mediaSRTP(agreed, local.Crypto)
	}
	var sess *media.Session
	if err == nil {
		sess, err = media.New(media.Config{Conn: conn, Remote: agreed.Addr, Peer: agreed.Addr.Addr(), Codec: codec,
			DTMF: agreed.DTMF, SRTP: keys, Ticker: t.sendClock, Log: inv.log})
	}
	if err != nil {
		_ = conn.Close()
		_ = dlg.Bye(context.Background())
		return nil, nil, media.Codec{}, fmt.Errorf("hung up the answered call: its SDP answer: %w", err)
	}
	return dlg, sess, codec, nil
}

// targetTransport is the transport a request to u goes by: its transport parameter, "tls"
// for a sips URI, else udp.
func targetTransport(u sip.Uri) string {
	if t, ok := u.UriParams.Get("transport"); ok {
		return strings.ToLower(t)
	}
	if u.IsEncrypted() {
		return "tls"
	}
	return "udp"
}

// keepEnded is how long an ended outbound call stays known to Call.
const keepEnded = 10 * time.Minute

// dialStatus is how a call that did not connect ended.
func dialStatus(err error) carrier.Status {
	switch {
	case errors.Is(err, dial.ErrBusy):
		return carrier.StatusBusy
	case errors.Is(err, dial.ErrNoAnswer):
		return carrier.StatusNoAnswer
	case errors.Is(err, dial.ErrCancelled):
		return carrier.StatusCanceled
	}
	return carrier.StatusFailed
}

// placedCall is call ref as it stands.
func (t *Trunk) placedCall(ref string) (carrier.Call, bool) {
	t.placedMu.Lock()
	p, ok := t.placed[ref]
	t.placedMu.Unlock()
	if !ok {
		return carrier.Call{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.call, true
}

// hangUpPlaced ends call ref: a CANCEL while it rings, a BYE once answered.
func (t *Trunk) hangUpPlaced(ref string) bool {
	t.placedMu.Lock()
	p, ok := t.placed[ref]
	t.placedMu.Unlock()
	if !ok {
		return false
	}
	p.mu.Lock()
	leg := p.leg
	p.mu.Unlock()
	if leg == nil {
		p.cancel()
		return true
	}
	leg.hangUp()
	return true
}

// transferPlaced asks the far end of call ref to call to instead (a blind transfer with
// REFER) and waits until it reports the new call answered; Handset's part then ends.
func (t *Trunk) transferPlaced(ctx context.Context, ref, to string) error {
	t.placedMu.Lock()
	p, ok := t.placed[ref]
	t.placedMu.Unlock()
	var dlg *dial.Dialog
	var leg *Leg
	if ok {
		p.mu.Lock()
		dlg, leg = p.dialog, p.leg
		p.mu.Unlock()
	}
	if dlg == nil {
		return carrier.Classify(carrier.ErrNotFound, fmt.Errorf("no answered call %s on this node", ref))
	}
	number, err := carrier.NormalizeNumber(to)
	if err != nil {
		return carrier.Classify(carrier.ErrInvalid, err)
	}
	target := *t.outboundTarget()
	target.User = number
	leg.signals.signal(time.Now(), "REFER", "out", "")
	if err := dlg.Refer(ctx, target); err != nil {
		leg.signals.signal(time.Now(), "REFER", "in", voice.Clip(err.Error(), 80))
		if ce := (*dial.CallError)(nil); errors.Is(err, dial.ErrReferRefused) && errors.As(err, &ce) && refusesRefer(ce.Status) {
			return t.bridgeTransfer(ctx, leg, dlg.Done(), target) // bridge.go: Handset places the call itself
		}
		return transferFailure(err)
	}
	return nil
}
