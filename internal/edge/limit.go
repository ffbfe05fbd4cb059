package edge

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPerAddress is how many connections one client address may hold open at once
// (WebSocket calls not counted). A carrier sends a handful at a time and a browser six;
// a single address holding more is hoarding them.
const DefaultPerAddress = 64

// vouchedFor is how long an address is trusted after a request from it was vouched for:
// its connections are then not counted at all.
const vouchedFor = 10 * time.Minute

// maxVouched bounds the addresses remembered as vouched for.
const maxVouched = 10000

// refusedLogEvery bounds how often refused connections are logged: a flood must not
// become a flood of log lines.
const refusedLogEvery = 10 * time.Second

// Limiter caps the connections each client address holds open. An IPv6 client is counted
// by its /64, the block one subscriber is usually given. Addresses in the exempt list (the
// trusted proxies, which carry many clients' connections) are not capped, nor for
// vouchedFor is an address a handler vouched for (Vouch: a request from it presented a
// token). A connection over the cap is closed as soon as it is accepted; one taken over
// by a handler (a WebSocket) stops counting then, so calls are never refused by it.
type Limiter struct {
	max    int
	exempt []netip.Prefix
	log    *slog.Logger
	now    func() time.Time // the clock trust lapses by (tests set it)

	mu      sync.Mutex // guards following
	open    map[netip.Addr]int
	vouched map[netip.Addr]time.Time // until when each is trusted
	refused int                      // since the last log line
	logged  time.Time                // when refusals were last logged
}

// NewLimiter returns a limiter allowing perAddress connections (0: DefaultPerAddress).
func NewLimiter(perAddress int, exempt []netip.Prefix, log *slog.Logger) *Limiter {
	if perAddress <= 0 {
		perAddress = DefaultPerAddress
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Limiter{max: perAddress, exempt: exempt, log: log, now: time.Now, open: map[netip.Addr]int{}, vouched: map[netip.Addr]time.Time{}}
}

// Open reports how many counted connections addr's client holds.
func (l *Limiter) Open(addr netip.Addr) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[clientKey(addr)]
}

// Listener wraps ln: the connections it returns are counted, and those over the cap are
// closed instead of returned.
func (l *Limiter) Listener(ln net.Listener) net.Listener { return &listener{Listener: ln, l: l} }

// clientKey is the address a client is counted under.
func clientKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

func peerAddr(c net.Conn) (netip.Addr, bool) {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		a, ok := netip.AddrFromSlice(ta.IP)
		return a.Unmap(), ok
	}
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	return ap.Addr().Unmap(), err == nil
}

// admit decides on a new connection from addr: whether it counts against its client's
// cap (not when addr is exempt), and whether it may stay open.
func (l *Limiter) admit(addr netip.Addr) (counted, ok bool) {
	for _, p := range l.exempt {
		if p.Contains(addr) {
			return false, true
		}
	}
	key := clientKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.now().Before(l.vouched[key]) {
		return false, true
	}
	if l.open[key] >= l.max {
		l.refused++
		if now := l.now(); now.Sub(l.logged) >= refusedLogEvery {
			l.log.Warn("refused connections over the cap per client address", "addr", key.String(),
				"open", l.open[key], "cap", l.max, "refused", l.refused)
			l.logged, l.refused = now, 0
		}
		return true, false
	}
	l.open[key]++
	return true, true
}

func (l *Limiter) release(key netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

// vouch trusts key's client for vouchedFor from now.
func (l *Limiter) vouch(key netip.Addr) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.vouched[key]; !ok && len(l.vouched) >= maxVouched {
		for a, until := range l.vouched {
			if now.After(until) {
				delete(l.vouched, a)
			}
		}
		if len(l.vouched) >= maxVouched {
			return // every one still trusted: this address stays capped
		}
	}
	l.vouched[key] = now.Add(vouchedFor)
}

// hijacked stops counting c: a handler took it over.
func (l *Limiter) hijacked(c net.Conn) {
	if lc, ok := c.(*conn); ok {
		lc.releaseOnce()
	}
}

type listener struct {
	net.Listener
	l *Limiter
}

func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr, ok := peerAddr(c)
		if !ok {
			return c, nil // not an IP connection (a test's pipe): nothing to count
		}
		counted, ok := ln.l.admit(addr)
		if !ok {
			_ = c.Close()
			continue
		}
		lc := &conn{Conn: c, l: ln.l, key: clientKey(addr)}
		lc.released.Store(!counted)
		return lc, nil
	}
}

// conn is a connection from an IP address; while counted, closing it or a handler
// taking it over (or vouching for it) uncounts it.
type conn struct {
	net.Conn
	l        *Limiter
	key      netip.Addr
	released atomic.Bool // not counted (any more)
}

func (c *conn) releaseOnce() {
	if c.released.CompareAndSwap(false, true) {
		c.l.release(c.key)
	}
}

func (c *conn) Close() error {
	c.releaseOnce()
	return c.Conn.Close()
}
