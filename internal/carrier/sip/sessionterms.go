package sip

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/voice"
)

// The terms of a session timer as the headers carry them (RFC 4028): Session-Expires
// names the interval and the refresher, Min-SE the shortest interval a side accepts, and
// the option tag "timer" in Supported or Require says a side takes part.

// sessionTerms are a dialog's agreed session timer.
type sessionTerms struct {
	interval time.Duration
	// refresher is who refreshes, as the headers write it: "uac" (the dialog's caller)
	// or "uas" (its callee).
	refresher string
	// handsetRefreshes: the refresher is Handset's side of the dialog.
	handsetRefreshes bool
	// peerSupports: the peer named the timer option tag (Supported or Require), so the
	// answer may require it back.
	peerSupports bool
}

// Refresher values of Session-Expires.
const (
	refresherUAC = "uac"
	refresherUAS = "uas"
)

// timerTag is session timers' option tag in Supported and Require.
const timerTag = "timer"

// maxSessionExpires bounds the interval a peer may ask for (a day): a larger one is read
// as a day, so arithmetic on it cannot overflow.
const maxSessionExpires = 24 * time.Hour

// parseSessionExpires reads a Session-Expires value: delta-seconds, then parameters of
// which refresher alone matters ("1800;refresher=uac"). refresher is "" when not given.
func parseSessionExpires(v string) (time.Duration, string, error) {
	if len(v) > 128 {
		return 0, "", errors.New("Session-Expires is too long")
	}
	num, params, _ := strings.Cut(v, ";")
	secs, err := strconv.ParseUint(strings.TrimSpace(num), 10, 32)
	if err != nil || secs == 0 {
		return 0, "", fmt.Errorf("Session-Expires %q is not a number of seconds", voice.Clip(num, 20))
	}
	d := min(time.Duration(secs)*time.Second, maxSessionExpires)
	refresher := ""
	for p := range strings.SplitSeq(params, ";") {
		name, value, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "refresher") {
			continue
		}
		switch r := strings.ToLower(strings.TrimSpace(value)); r {
		case refresherUAC, refresherUAS:
			refresher = r
		default:
			return 0, "", fmt.Errorf("Session-Expires names refresher %q: neither uac nor uas", voice.Clip(value, 20))
		}
	}
	return d, refresher, nil
}

// parseMinSE reads a Min-SE value: delta-seconds, parameters ignored.
func parseMinSE(v string) (time.Duration, error) {
	num, _, _ := strings.Cut(v, ";")
	secs, err := strconv.ParseUint(strings.TrimSpace(num), 10, 32)
	if err != nil || len(v) > 128 {
		return 0, fmt.Errorf("Min-SE %q is not a number of seconds", voice.Clip(num, 20))
	}
	return min(time.Duration(secs)*time.Second, maxSessionExpires), nil
}

// headers are a request's or a response's.
type headers interface {
	GetHeader(name string) sip.Header
	GetHeaders(name string) []sip.Header
}

// headerValue is the first value of a header under its name or its compact form.
func headerValue(m headers, name, compact string) (string, bool) {
	if h := m.GetHeader(name); h != nil {
		return h.Value(), true
	}
	if compact != "" {
		if h := m.GetHeader(compact); h != nil {
			return h.Value(), true
		}
	}
	return "", false
}

// namesTag reports whether any header called name (or its compact form) lists tag.
func namesTag(m headers, name, compact, tag string) bool {
	for _, n := range []string{name, compact} {
		if n == "" {
			continue
		}
		for _, h := range m.GetHeaders(n) {
			for t := range strings.SplitSeq(h.Value(), ",") {
				if strings.EqualFold(strings.TrimSpace(t), tag) {
					return true
				}
			}
		}
	}
	return false
}

// errTooBrief: the request's Session-Expires is below the floor (answered 422).
var errTooBrief = errors.New("sip: the session interval is below Min-SE")

// offeredTerms are the session timer terms of a request that starts or refreshes a
// dialog in which Handset is the callee (uas): ok is false when the request names no
// timer and the peer does not support one, and err errTooBrief or a malformed header.
func (o Options) offeredTerms(req *sip.Request) (sessionTerms, bool, error) {
	supports := namesTag(req, "Supported", "k", timerTag) || namesTag(req, "Require", "", timerTag)
	value, named := headerValue(req, "Session-Expires", "x")
	peerMin := time.Duration(0)
	if v, ok := headerValue(req, "Min-SE", ""); ok {
		d, err := parseMinSE(v)
		if err != nil {
			return sessionTerms{}, false, err
		}
		peerMin = d
	}
	if !named {
		if !supports {
			return sessionTerms{}, false, nil
		}
		// The caller can refresh but named no interval: Handset names one, and the caller
		// refreshes (RFC 4028 9).
		return sessionTerms{interval: max(o.sessionExpires(), peerMin), refresher: refresherUAC, peerSupports: true}, true, nil
	}
	d, refresher, err := parseSessionExpires(value)
	if err != nil {
		return sessionTerms{}, false, err
	}
	if d < o.minSE() {
		return sessionTerms{}, false, errTooBrief
	}
	switch {
	case !supports:
		refresher = refresherUAS // a caller without timers cannot refresh: Handset does
	case refresher == "":
		refresher = refresherUAC // left open: the caller refreshes
	}
	return sessionTerms{interval: d, refresher: refresher, handsetRefreshes: refresher == refresherUAS, peerSupports: supports}, true, nil
}

// addTerms writes the agreed terms into a 2xx: Session-Expires with the refresher, and
// Require: timer when the peer supports it (RFC 4028 9).
func addTerms(res *sip.Response, terms sessionTerms) {
	res.AppendHeader(sip.NewHeader("Session-Expires", sessionExpiresValue(terms)))
	if terms.peerSupports {
		res.AppendHeader(sip.NewHeader("Require", timerTag))
	}
}

func sessionExpiresValue(terms sessionTerms) string {
	return strconv.Itoa(int(terms.interval/time.Second)) + ";refresher=" + terms.refresher
}

// statusIntervalTooSmall is RFC 4028's 422.
const statusIntervalTooSmall = 422

// answeredTerms are the terms a 2xx to a refresh Handset sent settles: its
// Session-Expires, where "uac" is Handset; without one, the timer is off. A malformed
// one keeps the terms that were.
func answeredTerms(res *sip.Response, was sessionTerms) (sessionTerms, bool) {
	v, ok := headerValue(res, "Session-Expires", "x")
	if !ok {
		return sessionTerms{}, false
	}
	d, refresher, err := parseSessionExpires(v)
	if err != nil {
		return was, true
	}
	if refresher == "" {
		refresher = refresherUAC
	}
	return sessionTerms{interval: d, refresher: refresher, handsetRefreshes: refresher == refresherUAC,
		peerSupports: true}, true
}
