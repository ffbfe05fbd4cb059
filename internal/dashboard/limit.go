package dashboard

import (
	"net/netip"
	"sync"
	"time"
)

// Wrong tokens cost their sender: an address gets freeTries, then waits before each
// further try, the wait doubling with every wrong token (up to maxWait). A right token
// clears its address's record.
const (
	freeTries   = 5
	firstWait   = 2 * time.Second
	maxWait     = 15 * time.Minute
	maxAttempts = 10000 // addresses remembered; beyond it, the stalest are forgotten
	forgetAfter = time.Hour
)

type attempts struct {
	wrong int
	until time.Time // no try before
	last  time.Time
}

// signInLimit counts wrong tokens per client address.
type signInLimit struct {
	now  func() time.Time
	mu   sync.Mutex
	addr map[netip.Prefix]*attempts
}

func newSignInLimit(now func() time.Time) *signInLimit {
	return &signInLimit{now: now, addr: map[netip.Prefix]*attempts{}}
}

// wait is how long addr must wait before its next try; 0 when it may try now.
func (l *signInLimit) wait(addr netip.Prefix) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.addr[addr]
	if a == nil {
		return 0
	}
	return max(a.until.Sub(l.now()), 0)
}

// failed counts a wrong token from addr.
func (l *signInLimit) failed(addr netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	a := l.addr[addr]
	if a == nil {
		l.forget(now)
		a = &attempts{}
		l.addr[addr] = a
	}
	a.wrong++
	a.last = now
	if a.wrong >= freeTries {
		wait := firstWait
		for i := freeTries; i < a.wrong && wait < maxWait; i++ {
			wait *= 2
		}
		a.until = now.Add(min(wait, maxWait))
	}
}

// succeeded clears addr's record.
func (l *signInLimit) succeeded(addr netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.addr, addr)
}

// forget drops addresses quiet for an hour, and when too many are kept still, any whose
// wait is over: the map stays bounded whatever addresses an attacker uses.
func (l *signInLimit) forget(now time.Time) {
	if len(l.addr) < maxAttempts {
		return
	}
	for k, a := range l.addr {
		if now.Sub(a.last) > forgetAfter || (len(l.addr) >= maxAttempts && !now.Before(a.until)) {
			delete(l.addr, k)
		}
	}
	for k := range l.addr { // all still waiting: drop any, the map's bound comes first
		if len(l.addr) < maxAttempts {
			break
		}
		delete(l.addr, k)
	}
}
