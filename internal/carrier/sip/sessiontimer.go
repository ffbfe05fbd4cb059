package sip

import (
	"sync/atomic"
	"time"
)

// Session timers (RFC 4028). A SIP dialog has no keepalive of its own: when one side
// vanishes without a BYE (a crash, a lost route) the other would keep the call, and its
// media port and admission slot, forever. Session timers bound that: the INVITE names an
// interval (Session-Expires) and which side refreshes the session within it (the
// refresher, "uac" the caller or "uas" the callee) with a re-INVITE or UPDATE. When the
// refresher is Handset, it refreshes at half the interval; when it is the peer and no
// refresh arrives, Handset hangs up with a BYE shortly before the interval runs out.

// Session timer defaults.
const (
	// DefaultMinSE is the shortest interval Handset accepts: RFC 4028's floor.
	DefaultMinSE = 90 * time.Second
	// DefaultSessionExpires is the interval Handset asks for when it chooses.
	DefaultSessionExpires = 30 * time.Minute
)

// testMinSE is a shorter floor a test of `handset serve` sets, so a session can expire
// in seconds; zero everywhere else.
var testMinSE atomic.Int64

// SetTestMinSE lowers the session interval's floor of the trunks serve starts from now
// on, for tests that watch a session expire; it returns the function that restores it.
// Nothing but tests calls it: below 90 s is against RFC 4028.
func SetTestMinSE(d time.Duration) (restore func()) {
	old := testMinSE.Swap(int64(d))
	return func() { testMinSE.Store(old) }
}
