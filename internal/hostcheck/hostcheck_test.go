package hostcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestParse(t *testing.T) {
	good := map[string]HostPort{
		"Example.COM.":     {Name: "example.com"},
		"example.com:0443": {Name: "example.com", Port: "443"},
		"[::1]:8080":       {Name: "::1", Port: "8080"},
		"::ffff:127.0.0.1": {Name: "127.0.0.1"},
		"10.0.0.5:80":      {Name: "10.0.0.5", Port: "80"},
	}
	for in, want := range good {
		if got, ok := Parse(in); !ok || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "example.com:", "example.com:99999", "[::1", "[example.com]:80", "a b", "user@host", "[fe80::1%eth0]"} {
		if got, ok := Parse(in); ok {
			t.Errorf("Parse(%q) = %+v, accepted", in, got)
		}
	}
}

// onLoopback is a request for host arriving on 127.0.0.1:8080.
func onLoopback(host string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Host = host
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
}

func TestRequestAndSameOrigin(t *testing.T) {
	hs, bad := New("127.0.0.1:8080", []string{"handset.example.com", "not a host"})
	if len(bad) != 1 || bad[0] != "not a host" {
		t.Errorf("bad entries = %q", bad)
	}
	for host, want := range map[string]bool{
		"localhost:8080": true, "127.0.0.1:8080": true, "localhost:9090": false,
		"attacker.example:8080": false, "handset.example.com": true, "handset.example.com:8443": true,
	} {
		if _, ok := hs.Request(onLoopback(host)); ok != want {
			t.Errorf("Request(Host %q) = %v, want %v", host, ok, want)
		}
	}
	r := onLoopback("localhost:8080")
	for origin, want := range map[string]bool{
		"http://localhost:8080": true, "http://localhost:8080/": true, "http://127.0.0.1:8080": false,
		"http://evil.example": false, "http://localhost:8080/page": false, "null": false, "": false,
		"http://user@localhost:8080": false,
	} {
		if got := hs.SameOrigin(r, origin); got != want {
			t.Errorf("SameOrigin(%q) = %v, want %v", origin, got, want)
		}
	}
}
