package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// DefaultTrustedProxies is HANDSET_TRUSTED_PROXIES when unset: this machine only.
const DefaultTrustedProxies = "127.0.0.0/8,::1"

// NoTrustedProxies is the HANDSET_TRUSTED_PROXIES value that trusts no peer.
const NoTrustedProxies = "none"

// ParseTrustedProxies reads HANDSET_TRUSTED_PROXIES: comma-separated IP addresses and CIDR
// ranges ("10.0.0.5, 10.1.0.0/16, ::1"), or "none". A bare address is a range of one.
func ParseTrustedProxies(v string) ([]netip.Prefix, error) {
	v = strings.TrimSpace(v)
	if v == "" || strings.EqualFold(v, NoTrustedProxies) {
		return nil, nil
	}
	var out []netip.Prefix
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if strings.Contains(item, "/") {
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR range like 10.0.0.0/8 or fd00::/8", item)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is not an IP address or CIDR range", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("lists no address: write IP addresses or CIDR ranges separated by commas, or %q", NoTrustedProxies)
	}
	return out, nil
}

func checkTrustedProxies(v string) string {
	if _, err := ParseTrustedProxies(v); err != nil {
		return err.Error()
	}
	return ""
}
