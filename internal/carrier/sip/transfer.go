package sip

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/sip/dial"
	"github.com/handset-voice/handset/internal/voice"
)

// A call that came in is transferred with a blind REFER inside its dialog: the trunk (or
// PBX) is asked to call the number and connect the caller there, and reports the new
// call's progress in NOTIFY requests whose bodies are SIP status lines (message/sipfrag).

// referring is an inbound call's transfer in progress.
type referring struct {
	progress chan struct{}
	status   int
	phrase   string
}

// transferInbound transfers the inbound call whose SIP Call-ID is ref to number, and
// waits until the trunk reports the new call answered (or failed).
func (t *Trunk) transferInbound(ctx context.Context, ref, number string) error {
	c := t.dialogs.byCallID(ref)
	if c == nil {
		return carrier.Classify(carrier.ErrNotFound, fmt.Errorf("no call %s on this node", voice.Clip(ref, 80)))
	}
	to, err := carrier.NormalizeNumber(number)
	if err != nil {
		return carrier.Classify(carrier.ErrInvalid, err)
	}
	// The new call goes where outbound calls go, else back to the host the call came from.
	target := sip.Uri{Scheme: "sip", User: to, Host: c.dialog.InviteRequest.Source()}
	if o := t.outboundTarget(); o != nil {
		target = *o
		target.User = to
	} else if host, _, ok := strings.Cut(target.Host, ":"); ok {
		target.Host = host
	}
	r := &referring{progress: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.referring != nil {
		c.mu.Unlock()
		return carrier.Classify(carrier.ErrRejected, errors.New("a transfer of this call is in progress"))
	}
	c.referring = r // before the REFER goes: its NOTIFY may overtake its 202
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.referring = nil
		c.mu.Unlock()
	}()
	req := sip.NewRequest(sip.REFER, c.dialog.InviteRequest.Contact().Address)
	req.AppendHeader(sip.NewHeader("Refer-To", "<"+target.String()+">"))
	req.AppendHeader(sip.NewHeader("Referred-By", "<"+t.contact.Address.String()+">"))
	sameConnection(req, c.dialog.InviteRequest) // tls.go
	c.leg.signals.signal(time.Now(), "REFER", "out", "")
	res, err := c.dialog.Do(ctx, req)
	if err != nil {
		return carrier.Classify(carrier.ErrUnreachable, fmt.Errorf("REFER: %w", err))
	}
	if res.StatusCode != sip.StatusAccepted && res.StatusCode != sip.StatusOK {
		c.leg.signals.signal(time.Now(), fmt.Sprintf("%d %s", res.StatusCode, voice.Clip(res.Reason, 40)), "in", "REFER refused")
		if refusesRefer(res.StatusCode) {
			return t.bridgeInbound(ctx, c, target) // bridge.go: Handset places the call itself
		}
		return carrier.Classify(carrier.ErrRejected, fmt.Errorf("the trunk refused the transfer: %d %s", res.StatusCode, voice.Clip(res.Reason, 60)))
	}
	for {
		select {
		case <-ctx.Done():
			return carrier.Classify(carrier.ErrUnreachable, fmt.Errorf("waiting for the transfer: %w", ctx.Err()))
		case <-c.leg.ended:
			return nil // the trunk hung up on Handset: it took the call over
		case <-r.progress:
		}
		c.mu.Lock()
		status, phrase := r.status, r.phrase
		c.mu.Unlock()
		switch {
		case status >= 200 && status < 300:
			return nil
		case status >= 300:
			return carrier.Classify(carrier.ErrRejected, fmt.Errorf("the transferred call failed: %d %s", status, phrase))
		}
	}
}

// onNotify takes the progress of an inbound call's transfer.
func (t *Trunk) onNotify(req *sip.Request, tx sip.ServerTransaction) {
	c := t.callOf(req, tx)
	if c == nil {
		return
	}
	event := ""
	if h := req.GetHeader("Event"); h != nil {
		event, _, _ = strings.Cut(h.Value(), ";")
	}
	if !strings.EqualFold(strings.TrimSpace(event), "refer") {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 489, "Bad Event", nil))
		return
	}
	status, phrase, ok := dial.ParseSipfrag(req.Body())
	if !ok {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusBadRequest, "Bad Request", nil))
		return
	}
	_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil))
	c.mu.Lock()
	r := c.referring
	if r != nil && r.status < 200 {
		r.status, r.phrase = status, phrase
	}
	c.mu.Unlock()
	if r != nil {
		select {
		case r.progress <- struct{}{}:
		default:
		}
	}
}
