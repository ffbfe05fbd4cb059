package allow

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, and a list it accepts writes entries that read back as
// the same list.
func FuzzParse(f *testing.F) {
	f.Add("54.172.60.0/30,10.0.0.5,pbx.example.com")
	f.Add(" SIP.Example.com. , 2001:db8::/32, ::ffff:192.0.2.0/120 ,")
	f.Add("10.0.0.5:5060,[::1]")
	f.Fuzz(func(t *testing.T, spec string) {
		l, err := Parse(spec)
		if err != nil {
			return
		}
		again, err := Parse(strings.Join(l.entries, ","))
		if err != nil || !slices.Equal(again.entries, l.entries) {
			t.Fatalf("entries %q read back as %v, %v", l.entries, again, err)
		}
		for _, p := range l.prefixes {
			if p.Bits() == 0 || !l.Allowed(p.Addr()) || p.Addr().Is4In6() {
				t.Fatalf("block %v", p)
			}
		}
		_ = l.String()
		_ = l.Allowed(netip.IPv6Unspecified())
	})
}
