package media

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestNewPortsRefusesBadRanges(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	for _, c := range []struct {
		ip     netip.Addr
		lo, hi int
	}{
		{netip.Addr{}, 20000, 20010},
		{lo, 80, 20000},
		{lo, 20000, 70000},
		{lo, 20010, 20000},
		{lo, 20001, 20001}, // no even port
	} {
		if _, err := NewPorts(c.ip, c.lo, c.hi); err == nil {
			t.Errorf("NewPorts(%v, %d, %d) accepted a bad range", c.ip, c.lo, c.hi)
		}
	}
	p, err := NewPorts(lo, 20001, 20009)
	if err != nil {
		t.Fatal(err)
	}
	if l, h := p.Range(); l != 20002 || h != 20008 {
		t.Fatalf("range %d-%d, want the even ports 20002-20008", l, h)
	}
}

func TestListenHandsOutEvenPortsRoundRobinUntilFull(t *testing.T) {
	base := 20000 + 2*rand.IntN(19000) // a random spot, so parallel runs rarely meet
	p, err := NewPorts(netip.MustParseAddr("127.0.0.1"), base, base+5)
	if err != nil {
		t.Fatal(err)
	}
	var open []*net.UDPConn
	defer func() {
		for _, c := range open {
			_ = c.Close()
		}
	}()
	seen := map[int]bool{}
	for range 4 {
		c, err := p.Listen()
		if err != nil {
			if !strings.Contains(err.Error(), "no free RTP port") || !strings.Contains(err.Error(), "-") {
				t.Fatalf("the error does not name the range: %v", err)
			}
			break
		}
		open = append(open, c)
		port := c.LocalAddr().(*net.UDPAddr).Port
		if port%2 != 0 || port < base || port > base+4 || seen[port] {
			t.Fatalf("port %d: want a fresh even port in %d-%d", port, base, base+4)
		}
		seen[port] = true
	}
	if len(open) > 3 {
		t.Fatalf("%d sockets from a range of three even ports", len(open))
	}
	if len(open) == 0 {
		t.Skip("every port of the random range was busy")
	}
	_ = open[0].Close()
	open = open[1:]
	if c, err := p.Listen(); err != nil {
		t.Fatalf("a released port was not handed out again: %v", err)
	} else {
		open = append(open, c)
	}
}
