package media

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
)

// Ports hands out RTP sockets on even ports of a configured range (RFC 3550 keeps the odd
// port above for RTCP), round robin so a port just released is not reused at once, skipping
// ports another process holds. Safe for concurrent use.
type Ports struct {
	ip     netip.Addr
	lo, hi int // even, lo <= hi

	mu   sync.Mutex
	next int // guarded by mu
}

// NewPorts returns the allocator for ip and the inclusive range lo-hi. The range must lie
// within 1024-65535 and hold at least one even port.
func NewPorts(ip netip.Addr, lo, hi int) (*Ports, error) {
	if !ip.IsValid() {
		return nil, errors.New("media: RTP ports need a valid IP address to bind")
	}
	if lo < 1024 || hi > 65535 || lo > hi {
		return nil, fmt.Errorf("media: RTP port range %d-%d: need 1024 <= low <= high <= 65535", lo, hi)
	}
	if lo%2 == 1 {
		lo++
	}
	if hi%2 == 1 {
		hi--
	}
	if lo > hi {
		return nil, fmt.Errorf("media: RTP port range %d-%d holds no even port", lo, hi)
	}
	return &Ports{ip: ip.Unmap(), lo: lo, hi: hi, next: lo}, nil
}

// Range is the even ports the allocator hands out, lowest and highest.
func (p *Ports) Range() (lo, hi int) { return p.lo, p.hi }

// Listen opens a UDP socket on the next free even port. The error names the range when
// every port in it is taken.
func (p *Ports) Listen() (*net.UDPConn, error) {
	n := (p.hi-p.lo)/2 + 1
	var last error
	for range n {
		p.mu.Lock()
		port := p.next
		p.next += 2
		if p.next > p.hi {
			p.next = p.lo
		}
		p.mu.Unlock()
		conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.ip, uint16(port))))
		if err == nil {
			return conn, nil
		}
		last = err
	}
	return nil, fmt.Errorf("media: no free RTP port in %s %d-%d (%d even ports): %w", p.ip, p.lo, p.hi, n, last)
}
