package dial

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/emiago/sipgo/sip"
)

// transfer is a REFER in progress: the statuses its NOTIFYs report.
type transfer struct {
	// progress wakes the waiting Refer; latest is the last status reported.
	progress chan struct{}
	latest   int
	phrase   string
}

// maxSipfrag bounds the part of a NOTIFY body read: its status line.
const maxSipfrag = 256

// Refer asks the callee to call target instead (a blind transfer) and waits until the
// callee's NOTIFY reports that the new call was answered. It returns a *CallError wrapping
// ErrRefused and ErrReferRefused when the callee refuses REFER (405, 501, 603…), the kind matching the new
// call's status when the NOTIFY reports it failed (ErrBusy, ErrNoAnswer…), or ErrEnded when
// the dialog ends first. After success the callee usually hangs up; Bye if it does not.
func (d *Dialog) Refer(ctx context.Context, target sip.Uri) error {
	d.referring.Lock()
	defer d.referring.Unlock()
	if d.over() {
		return &CallError{Kind: ErrEnded, Err: fmt.Errorf("no transfer of a call that has ended")}
	}
	t := &transfer{progress: make(chan struct{}, 1)}
	d.mu.Lock()
	d.transfer = t // before the REFER goes: its NOTIFY may come before its 202
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.transfer = nil
		d.mu.Unlock()
	}()

	res, err := d.s.Do(ctx, d.referRequest(target))
	if err != nil {
		return &CallError{Kind: ErrUnreachable, Err: fmt.Errorf("REFER: %w", err)}
	}
	if res.StatusCode != 202 && res.StatusCode != 200 {
		return &CallError{Status: res.StatusCode, Phrase: sanitize(res.Reason), Kind: ErrRefused, Err: ErrReferRefused}
	}
	for {
		ended := false
		select {
		case <-ctx.Done():
			return &CallError{Kind: ErrCancelled, Err: fmt.Errorf("waiting for the transfer: %w", ctx.Err())}
		case <-d.done:
			ended = true // the callee hangs up once it reports the new call answered: a report may be waiting too
		case <-t.progress:
		}
		d.mu.Lock()
		status, phrase := t.latest, t.phrase
		d.mu.Unlock()
		switch {
		case status >= 200 && status < 300:
			return nil
		case status >= 300:
			return &CallError{Status: status, Phrase: phrase, Kind: kindOf(status)}
		case ended:
			return &CallError{Kind: ErrEnded, Err: fmt.Errorf("the call ended before the transfer was reported")}
		}
	}
}

// referRequest is the REFER for target, to the callee's contact.
func (d *Dialog) referRequest(target sip.Uri) *sip.Request {
	remote := d.s.InviteRequest.Recipient
	if c := d.s.InviteResponse.Contact(); c != nil {
		remote = c.Address
	}
	req := sip.NewRequest(sip.REFER, *remote.Clone())
	req.AppendHeader(sip.NewHeader("Refer-To", "<"+target.String()+">"))
	req.AppendHeader(sip.NewHeader("Referred-By", "<"+d.s.InviteRequest.From().Address.String()+">"))
	return req
}

// notified answers a NOTIFY: the progress of a transfer, reported as the status line of
// the new call (a message/sipfrag body).
func (d *Dialog) notified(req *sip.Request, tx sip.ServerTransaction) {
	event := req.GetHeader("Event")
	if event == nil || !strings.EqualFold(strings.TrimSpace(strings.SplitN(event.Value(), ";", 2)[0]), "refer") {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 489, "Bad Event", nil))
		return
	}
	status, phrase, ok := ParseSipfrag(req.Body())
	if !ok {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 400, "Bad Request", nil))
		return
	}
	// The report is taken before it is answered: a callee that hangs up on the answer must
	// find it taken.
	d.mu.Lock()
	t := d.transfer
	if t != nil && t.latest < 200 {
		t.latest, t.phrase = status, phrase
	}
	d.mu.Unlock()
	_ = tx.Respond(sip.NewResponseFromRequest(req, 200, "OK", nil))
	if t != nil {
		select {
		case t.progress <- struct{}{}:
		default: // a wake-up is already pending; it reads the latest status
		}
	}
}

// ParseSipfrag reads the status line of a message/sipfrag body (a NOTIFY reporting a
// transfer's progress): "SIP/2.0 200 OK". The phrase is bounded and printable.
func ParseSipfrag(body []byte) (status int, phrase string, ok bool) {
	if len(body) > maxSipfrag {
		body = body[:maxSipfrag]
	}
	line, _, _ := bytes.Cut(body, []byte("\n"))
	line = bytes.TrimRight(line, "\r")
	version, rest, found := strings.Cut(string(line), " ")
	if !found || version != "SIP/2.0" {
		return 0, "", false
	}
	code, phrase, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if err != nil || len(code) != 3 || status < 100 || status > 699 {
		return 0, "", false
	}
	return status, sanitize(phrase), true
}
