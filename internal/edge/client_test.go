package edge

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// Behind a trusted proxy the client is who the proxy says it forwarded for; anyone else's
// X-Forwarded-For is ignored, and a client cannot hide behind entries it wrote itself.
func TestClientBehindTrustedProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	cases := []struct {
		name, remote string
		forwarded    []string
		want         string
	}{
		{"direct", "203.0.113.7:5000", nil, "203.0.113.7/32"},
		{"direct, forged header ignored", "203.0.113.7:5000", []string{"198.51.100.1"}, "203.0.113.7/32"},
		{"one proxy", "10.0.0.2:5000", []string{"198.51.100.1"}, "198.51.100.1/32"},
		{"two proxies", "10.0.0.2:5000", []string{"198.51.100.1, 10.0.0.9"}, "198.51.100.1/32"},
		{"entries the client wrote stay left of its own", "10.0.0.2:5000", []string{"1.2.3.4, 198.51.100.1"}, "198.51.100.1/32"},
		{"over two header lines", "10.0.0.2:5000", []string{"1.2.3.4", "198.51.100.1"}, "198.51.100.1/32"},
		{"garbage stops the walk at the proxy", "10.0.0.2:5000", []string{"198.51.100.1, not-an-ip"}, "10.0.0.2/32"},
		{"a proxy with no header is the client", "10.0.0.2:5000", nil, "10.0.0.2/32"},
		{"IPv6 counted by its /64", "[2001:db8:1:2:3:4:5:6]:443", nil, "2001:db8:1:2::/64"},
		{"IPv6 behind a proxy", "[fd00::1]:443", []string{"2001:db8:9:9::1"}, "2001:db8:9:9::/64"},
		{"mapped IPv4", "[::ffff:203.0.113.7]:1", nil, "203.0.113.7/32"},
		{"unreadable peer", "pipe", nil, "invalid Prefix"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		for _, v := range c.forwarded {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := Client(r, trusted).String(); got != c.want {
			t.Errorf("%s: Client = %s, want %s", c.name, got, c.want)
		}
	}
}

// A header of thousands of entries is read only as far as proxies can have written.
func TestClientReadsABoundedHeader(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.2:5000"
	r.Header.Set("X-Forwarded-For", strings.Repeat("10.1.1.1, ", 5000)+"10.1.1.2")
	if got := Client(r, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}).String(); got != "10.1.1.1/32" {
		t.Errorf("all trusted: Client = %s, want the leftmost entry read", got)
	}
}
