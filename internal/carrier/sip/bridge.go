package sip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/sip/dial"
	"github.com/handset-voice/handset/internal/carrier/sip/media"
	"github.com/handset-voice/handset/internal/voice"
)

// Some peers will not carry out a blind transfer: a PBX with REFER switched off, a trunk
// that answers it 501 Not Implemented. Then Handset makes the transfer itself: it calls
// the target through the trunk, as the REFER would have asked the peer to, and once the
// target answers it joins the two calls, forwarding each 20 ms of one side's audio (and
// its DTMF) to the other on the media clocks already running. The agent leaves the line as
// after a REFER: the call ends for it as transferred. Handset stays in the media path until
// either side hangs up, then hangs up the other.

// bridgeRingTimeout bounds how long the transfer's target may ring before the transfer
// fails and the caller stays with the agent.
const bridgeRingTimeout = 30 * time.Second

// refusesRefer reports whether a REFER's final status means the peer will not transfer
// calls (405 Method Not Allowed, 420 Bad Extension, 489 Bad Event, 501 Not Implemented)
// or will not transfer this one itself (403 Forbidden, 603 Decline): the transfer is
// still wanted, and the number passed Handset's own allow-list, so Handset places the call.
// Every other failure fails the transfer: the number (404, 484) or the credentials (401,
// 407) would fail the same way, the call is gone (481), or the peer is in trouble (5xx).
func refusesRefer(status int) bool {
	switch status {
	case sip.StatusForbidden, sip.StatusMethodNotAllowed, sip.StatusBadExtension, 489,
		sip.StatusNotImplemented, sip.StatusGlobalDecline:
		return true
	}
	return false
}

// bridge is a caller joined to a transfer's target by Handset.
type bridge struct {
	log      *slog.Logger
	caller   *Leg            // the call transferred; its media and dialog are the bridge's
	gone     <-chan struct{} // closed when the caller hangs up
	media    mediaRun        // the caller's session, running for the bridge
	release  func()          // forgets the caller's dialog once the bridge is over
	target   *dial.Dialog
	far      *media.Session // the target's
	toTarget *media.Forwarder
	toCaller *media.Forwarder
	started  time.Time

	stop     chan struct{} // closed when the trunk closes: Handset hangs up both
	stopOnce sync.Once
	ended    chan struct{} // closed once both sides are hung up
}

// bridgeInbound bridges the inbound call c, whose peer refused to transfer it, to target.
func (t *Trunk) bridgeInbound(ctx context.Context, c *inboundCall, target sip.Uri) error {
	return t.bridgeTransfer(ctx, c.leg, c.leg.ended, target)
}

// bridgeTransfer calls target for the call on leg, whose peer refused to transfer it (gone is
// closed when that peer hangs up), and bridges the two once the target answers. It
// returns when the bridge is up (the agent's leg then ends as transferred) or the call
// failed (the caller stays with the agent).
func (t *Trunk) bridgeTransfer(ctx context.Context, leg *Leg, gone <-chan struct{}, target sip.Uri) error {
	// The caller id is Handset's own number on the trunk, which the trunk accepts: the
	// number an inbound caller called, or the one Handset placed its call from.
	from := leg.info.To
	if leg.info.Direction == voice.Outbound {
		from = leg.info.From
	}
	if from == "" {
		from = t.contact.Address.User
	}
	log := t.log.With("call_id", leg.info.CarrierRef, "bridge_to", target.User)
	sig := leg.signals
	// The target stops ringing (CANCEL) when the caller hangs up or the agent's call ends.
	dialing, stopDialing := context.WithCancel(ctx)
	defer stopDialing()
	go func() {
		select {
		case <-gone:
		case <-leg.handoff.over:
		case <-dialing.Done():
		}
		stopDialing()
	}()
	dlg, far, _, err := t.connect(dialing, invitation{target: target, from: from, ringTimeout: bridgeRingTimeout,
		sig: sig, why: "bridge", inviting: func() {}, log: log})
	if err != nil {
		sig.signal(time.Now(), failureName(err), "in", "bridge")
		return transferFailure(fmt.Errorf("the trunk refused the transfer, and the call Handset placed instead failed: %w", err))
	}
	far.Start()
	b := &bridge{log: log, caller: leg, gone: gone, release: leg.release, target: dlg, far: far,
		toTarget: media.NewForwarder(leg.media, far), toCaller: media.NewForwarder(far, leg.media),
		stop: make(chan struct{}), ended: make(chan struct{})}
	if b.media, err = leg.takeMedia(ctx, b.toTarget); err != nil {
		_ = far.Close()
		bye, cancel := context.WithTimeout(context.Background(), byeTimeout)
		defer cancel()
		_ = dlg.Bye(bye)
		return carrier.Classify(carrier.ErrUnreachable, fmt.Errorf("the call ended before it could be bridged: %w", err))
	}
	b.started = time.Now()
	sig.signal(b.started, "bridging", "out", target.User)
	log.Info("bridging a transfer the trunk refused", "to", target.String())
	t.bridges.add(b)
	go t.runBridge(b)
	return nil
}

// runBridge carries the bridge until either side hangs up (or its media stops, or the
// trunk closes), then hangs up the other.
func (t *Trunk) runBridge(b *bridge) {
	defer t.bridges.remove(b)
	defer close(b.ended)
	farCtx, stopFar := context.WithCancel(context.Background())
	farDone := make(chan error, 1)
	go func() { farDone <- b.far.Run(farCtx, b.toCaller) }()
	callerDone := b.media.done
	var who string
	var err error
	select {
	case <-b.gone:
		who = "caller"
	case <-b.target.Done():
		who = "target"
	case err = <-callerDone:
		who, callerDone = "caller's media", nil
	case err = <-farDone:
		who, farDone = "target's media", nil
	case <-b.stop:
		who = "handset"
	}
	if who != "target" {
		bye, cancel := context.WithTimeout(context.Background(), byeTimeout)
		if byeErr := b.target.Bye(bye); byeErr != nil {
			b.log.Warn("could not hang up the bridged target (BYE)", "err", byeErr)
		}
		cancel()
	}
	if who != "caller" {
		b.caller.hangUp()
	}
	stopFar()
	b.media.stop()
	if farDone != nil {
		<-farDone
	}
	if callerDone != nil {
		<-callerDone
	}
	_ = b.far.Close()
	_ = b.caller.media.Close()
	b.release()
	toTarget, lostToTarget := b.toTarget.Forwarded()
	toCaller, lostToCaller := b.toCaller.Forwarded()
	b.log.Info("bridge ended", "hung_up", who, "err", err, "duration", time.Since(b.started).Round(time.Millisecond),
		"frames_to_target", toTarget, "frames_to_caller", toCaller, "dropped", lostToTarget+lostToCaller)
}

// end hangs the bridge up from Handset's side.
func (b *bridge) end() { b.stopOnce.Do(func() { close(b.stop) }) }

// bridges are a trunk's bridges in progress.
type bridges struct {
	mu     sync.Mutex
	live   map[*bridge]struct{}
	closed bool // the trunk is closing: a bridge set up now ends at once
}

func (bs *bridges) add(b *bridge) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.live == nil {
		bs.live = map[*bridge]struct{}{}
	}
	bs.live[b] = struct{}{}
	if bs.closed {
		b.end()
	}
}

func (bs *bridges) remove(b *bridge) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	delete(bs.live, b)
}

// endAll hangs up every bridge and waits until each has.
func (bs *bridges) endAll() {
	bs.mu.Lock()
	bs.closed = true
	live := make([]*bridge, 0, len(bs.live))
	for b := range bs.live {
		live = append(live, b)
	}
	bs.mu.Unlock()
	for _, b := range live {
		b.end()
	}
	for _, b := range live {
		<-b.ended
	}
}

// failureName is how the journal names a failed INVITE: its final status, else its kind.
func failureName(err error) string {
	var ce *dial.CallError
	if errors.As(err, &ce) && ce.Status != 0 {
		return fmt.Sprintf("%d %s", ce.Status, ce.Phrase)
	}
	if errors.As(err, &ce) {
		return ce.Kind.Error()
	}
	return "failed"
}

// transferFailure classifies a failed transfer: refused when the far end said no (busy,
// no answer, a bad number, refused), unreachable otherwise.
func transferFailure(err error) error {
	if errors.Is(err, dial.ErrRefused) || errors.Is(err, dial.ErrBusy) || errors.Is(err, dial.ErrNoAnswer) || errors.Is(err, dial.ErrInvalidNumber) {
		return carrier.Classify(carrier.ErrRejected, err)
	}
	return carrier.Classify(carrier.ErrUnreachable, err)
}
