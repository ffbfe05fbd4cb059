package sip

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/dial"
	"github.com/handset-voice/handset/internal/voice"
)

// Session timers on calls Handset places (RFC 4028). The INVITE says Handset supports them,
// asks for its interval (Options.SessionExpires, 30 min by default) and names its
// floor in Min-SE; a 422 asks for a longer interval, and the INVITE goes once more with the
// far end's. The 2xx settles the terms: refresher "uac" is Handset, which then refreshes at
// half the interval (UPDATE when the far end allows it, else a re-INVITE offering the same
// session); "uas" is the far end, and a session it does not refresh is hung up before it
// runs out. A 2xx without Session-Expires means no timer. The far end's own refreshes are
// answered with the terms they settle.

// placedTimer is the session timer of one call Handset placed.
type placedTimer struct {
	t     *Trunk
	timer *sessionTimer
	sig   *signals

	mu  sync.Mutex
	dlg *dial.Dialog                     // once answered
	end func(reason string, cause error) // hangs up the answered call
}

func (t *Trunk) newPlacedTimer(sig *signals) *placedTimer {
	p := &placedTimer{t: t, sig: sig}
	p.timer = &sessionTimer{
		clk:     t.opts.clock(),
		refresh: p.refresh,
		expire: func() {
			t.log.Warn("the called party did not refresh the SIP session: hanging up")
			p.hangUp("session expired", errSessionExpired)
		},
	}
	return p
}

// inviteHeaders are the INVITE's offer of a session timer of interval.
func (p *placedTimer) inviteHeaders(interval time.Duration) []sip.Header {
	return []sip.Header{
		sip.NewHeader("Supported", timerTag),
		sip.NewHeader("Session-Expires", strconv.Itoa(int(interval/time.Second))),
		sip.NewHeader("Min-SE", strconv.Itoa(int(p.t.opts.minSE()/time.Second))),
	}
}

// answered starts the timer on the terms of the 2xx that answered the INVITE; end hangs
// the call up.
func (p *placedTimer) answered(dlg *dial.Dialog, end func(reason string, cause error)) {
	p.mu.Lock()
	p.dlg, p.end = dlg, end
	p.mu.Unlock()
	if terms, ok := placedTerms(dlg.Answered()); ok {
		p.timer.arm(terms)
	}
}

// placedTerms are the terms a 2xx to an INVITE or a refresh Handset sent settles, in which
// Handset is the uac; ok is false when it names no timer, or one Handset cannot read.
func placedTerms(res *sip.Response) (sessionTerms, bool) {
	v, named := headerValue(res, "Session-Expires", "x")
	if !named {
		return sessionTerms{}, false
	}
	d, refresher, err := parseSessionExpires(v)
	if err != nil {
		return sessionTerms{}, false
	}
	if refresher == "" { // the 2xx must name one; Handset, which asked, takes it on
		refresher = refresherUAC
	}
	supports := namesTag(res, "Require", "", timerTag) || namesTag(res, "Supported", "k", timerTag)
	return sessionTerms{interval: d, refresher: refresher, handsetRefreshes: refresher == refresherUAC, peerSupports: supports}, true
}

// onRefresh takes the far end's refresh (a re-INVITE or UPDATE): its terms go into the
// 2xx and restart the timer, or it is refused 422 (too brief) or 400 (malformed).
func (p *placedTimer) onRefresh(req *sip.Request) (int, []sip.Header) {
	p.sig.signal(time.Now(), string(req.Method), "in", "")
	terms, timed, err := p.t.opts.offeredTerms(req)
	switch {
	case errors.Is(err, errTooBrief):
		return statusIntervalTooSmall, []sip.Header{sip.NewHeader("Min-SE", strconv.Itoa(int(p.t.opts.minSE()/time.Second)))}
	case err != nil:
		return sip.StatusBadRequest, nil
	case !timed:
		p.timer.disarm()
		return 0, nil
	}
	p.timer.arm(terms)
	headers := []sip.Header{sip.NewHeader("Session-Expires", sessionExpiresValue(terms))}
	if terms.peerSupports {
		headers = append(headers, sip.NewHeader("Require", timerTag))
	}
	return 0, headers
}

// refresh refreshes the session as its refresher: an UPDATE when the far end allows one,
// else a re-INVITE. A 422 is met once with the interval it asks for; any other failure
// hangs up.
func (p *placedTimer) refresh(terms sessionTerms) {
	p.mu.Lock()
	dlg := p.dlg
	p.mu.Unlock()
	if dlg == nil {
		return
	}
	method := sip.INVITE
	if namesTag(dlg.Answered(), "Allow", "", string(sip.UPDATE)) {
		method = sip.UPDATE
	}
	mine := terms
	mine.refresher = refresherUAC
	var res *sip.Response
	var err error
	for range 2 {
		p.sig.signal(time.Now(), string(method), "out", "session refresh")
		ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
		res, err = dlg.Refresh(ctx, method, []sip.Header{
			sip.NewHeader("Session-Expires", sessionExpiresValue(mine)),
			sip.NewHeader("Supported", timerTag),
		})
		cancel()
		if err != nil || res.StatusCode != statusIntervalTooSmall {
			break
		}
		v, _ := headerValue(res, "Min-SE", "")
		longer, perr := parseMinSE(v)
		if perr != nil || longer <= mine.interval {
			break
		}
		mine.interval = longer
	}
	if err == nil && !res.IsSuccess() {
		err = fmt.Errorf("%d %s", res.StatusCode, voice.Clip(res.Reason, 80))
	}
	select {
	case <-dlg.Done():
		return // the call ended meanwhile: nothing to refresh
	default:
	}
	if err != nil {
		p.t.log.Warn("could not refresh the SIP session: hanging up", "err", err)
		p.hangUp("session refresh failed", errRefreshFailed)
		return
	}
	if next, ok := placedTerms(res); ok {
		p.timer.arm(next)
		return
	}
	p.timer.disarm()
}

func (p *placedTimer) hangUp(reason string, cause error) {
	p.mu.Lock()
	end := p.end
	p.mu.Unlock()
	if end != nil {
		end(reason, cause)
	}
}
