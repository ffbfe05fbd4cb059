package mediastream

import (
	"crypto/tls"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestPublicURL(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	forwarded := map[string]string{"X-Forwarded-Host": "Victim.example, proxy.internal", "X-Forwarded-Proto": "HTTPS"}
	tests := []struct {
		name, public, peer string
		headers            map[string]string
		tls, ws            bool
		want               string
	}{
		{"configured base wins", "https://voice.example/", "10.1.1.1:1", forwarded, false, false, "https://voice.example/p?q=1"},
		{"configured base as a socket", "https://voice.example", "203.0.113.5:1", nil, false, true, "wss://voice.example/p?q=1"},
		{"own host over TLS", "", "203.0.113.5:1", nil, true, false, "https://own.test/p?q=1"},
		{"untrusted peer's forwarded headers ignored", "", "203.0.113.5:1", forwarded, false, false, "http://own.test/p?q=1"},
		{"trusted proxy's forwarded headers", "", "10.9.9.9:1", forwarded, false, true, "wss://victim.example/p?q=1"},
		{"trusted over IPv6", "", "[::1]:1", forwarded, false, false, "https://victim.example/p?q=1"},
		{"trusted as v4-mapped", "", "[::ffff:10.2.3.4]:1", forwarded, false, false, "https://victim.example/p?q=1"},
		{"loopback not trusted unless listed", "", "127.0.0.1:1", forwarded, false, false, "http://own.test/p?q=1"},
		{"odd scheme ignored", "", "10.1.1.1:1", map[string]string{"X-Forwarded-Proto": "javascript"}, false, false, "http://own.test/p?q=1"},
		{"unparsable peer", "", "somewhere", forwarded, false, false, "http://own.test/p?q=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "http://own.test/p?q=1", nil)
			r.RemoteAddr = tt.peer
			if tt.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			if got := PublicURL(r, tt.public, trusted, tt.ws); got != tt.want {
				t.Errorf("PublicURL = %q, want %q", got, tt.want)
			}
		})
	}
}
