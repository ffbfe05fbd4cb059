package edge

import (
	"net/http"
	"net/netip"
	"strings"
)

// maxForwardedHops bounds how much of an X-Forwarded-For header is read: a client can
// send any number of entries, and only the last few can have been added by our proxies.
const maxForwardedHops = 16

// Client is the client a request counts against in per-client limits (sign-in tries,
// browser calls): its address as an IPv4 /32 or an IPv6 /64 (one subscriber's block).
// When the peer is one of trusted (HANDSET_TRUSTED_PROXIES), the client is the nearest
// address in X-Forwarded-For that is not itself a trusted proxy, since behind a proxy every
// request's peer is the proxy and a limit on it would be a limit on everyone. Entries a
// client wrote itself are further left and never read past the first untrusted one. The
// zero Prefix stands for an address that cannot be read (they share one allowance).
func Client(r *http.Request, trusted []netip.Prefix) netip.Prefix {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	addr := ap.Addr().Unmap().WithZone("")
	if !within(addr, trusted) {
		return block(addr)
	}
	hops := forwardedFor(r.Header.Values("X-Forwarded-For"))
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(hops[i])
		if err != nil {
			break // not an address: what the proxy says cannot be read further
		}
		addr = hop.Unmap().WithZone("")
		if !within(addr, trusted) {
			break
		}
	}
	return block(addr)
}

// forwardedFor is the last maxForwardedHops entries of the X-Forwarded-For values, in order.
func forwardedFor(values []string) []string {
	var hops []string
	for _, v := range values {
		for h := range strings.SplitSeq(v, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	if len(hops) > maxForwardedHops {
		hops = hops[len(hops)-maxForwardedHops:]
	}
	return hops
}

func within(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func block(a netip.Addr) netip.Prefix {
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}
