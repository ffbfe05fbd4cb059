package allow

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

func mustParse(t *testing.T, spec string) *List {
	t.Helper()
	l, err := Parse(spec)
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	return l
}

func TestAllowedMatchesAddressesAndBlocks(t *testing.T) {
	l := mustParse(t, " 54.172.60.0/30 , 10.0.0.5,2001:db8::/32,, ::ffff:192.0.2.0/120")
	cases := map[string]bool{
		"54.172.60.0": true, "54.172.60.3": true, "54.172.60.4": false,
		"10.0.0.5": true, "10.0.0.6": false,
		"::ffff:10.0.0.5":    true, // IPv4-mapped matches its IPv4 entry
		"::ffff:54.172.60.1": true,
		"2001:db8::1":        true, "2001:db9::1": false,
		"192.0.2.77":       true, // the mapped block became its IPv4 block
		"fe80::1%eth0":     false,
		"2001:db8::9%eth0": true,
	}
	for text, want := range cases {
		if got := l.Allowed(netip.MustParseAddr(text)); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", text, got, want)
		}
	}
	if l.Allowed(netip.Addr{}) {
		t.Error("the zero address is allowed")
	}
}

func TestParseRefusesBadEntriesByName(t *testing.T) {
	for _, spec := range []string{
		"10.0.0.0/33", "10.0.0.5/24", "0.0.0.0/0", "::/0", "::ffff:0.0.0.0/96", "::ffff:0.0.0.0/95",
		"sip.example.com:5060", "10.0.0.5:5060", "[2001:db8::1]", "[2001:db8::1]:5060",
		"bad_host.example.com", "-lead.example.com", "a..b", "1.2.3", "10.0.0.256",
		"fe80::1%eth0", "host name", strings.Repeat("a", 64) + ".com",
		"sip.example.com, http://x",
	} {
		_, err := Parse(spec)
		if !errors.Is(err, ErrBadEntry) {
			t.Errorf("Parse(%q) = %v, want ErrBadEntry", spec, err)
			continue
		}
		last := strings.TrimSpace(spec[strings.LastIndex(spec, ",")+1:])
		if !strings.Contains(err.Error(), clip(last)) {
			t.Errorf("Parse(%q): %q does not name the entry", spec, err)
		}
	}
}

func TestParseBoundsTheEntries(t *testing.T) {
	entries := make([]string, MaxEntries+1)
	for i := range entries {
		entries[i] = netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}).String()
	}
	if _, err := Parse(strings.Join(entries[:MaxEntries], ",")); err != nil {
		t.Fatalf("%d entries: %v", MaxEntries, err)
	}
	if _, err := Parse(strings.Join(entries, ",")); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("%d entries: %v, want ErrBadEntry", len(entries), err)
	}
}

func TestEmptyAndString(t *testing.T) {
	for _, spec := range []string{"", " , ,"} {
		if l := mustParse(t, spec); !l.Empty() || l.Allowed(netip.MustParseAddr("10.0.0.1")) {
			t.Errorf("Parse(%q): not an empty list", spec)
		}
	}
	l := mustParse(t, "10.0.0.5,SIP.Example.com.,sip.example.com,10.0.0.5")
	if l.Empty() {
		t.Fatal("a list with entries is empty")
	}
	if got, want := l.String(), "10.0.0.5/32, sip.example.com (not resolved yet)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	r := &fakeResolver{answers: map[string][]netip.Addr{"sip.example.com": addrs("192.0.2.2", "192.0.2.1", "192.0.2.2")}}
	if err := l.Refresh(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got, want := l.String(), "10.0.0.5/32, sip.example.com (192.0.2.1 192.0.2.2)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	fail    map[string]bool
	asked   []string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, network+" "+host)
	if r.fail[host] {
		return nil, errors.New("no such host")
	}
	return r.answers[host], nil
}

func addrs(texts ...string) []netip.Addr {
	out := make([]netip.Addr, len(texts))
	for i, t := range texts {
		out[i] = netip.MustParseAddr(t)
	}
	return out
}

func TestRefreshResolvesHostnamesAndKeepsTheLastGoodSet(t *testing.T) {
	l := mustParse(t, "sip.example.com,pbx.example.net,10.0.0.5")
	ip := netip.MustParseAddr
	if l.Allowed(ip("192.0.2.1")) {
		t.Fatal("allowed before any Refresh")
	}
	r := &fakeResolver{answers: map[string][]netip.Addr{
		"sip.example.com": addrs("192.0.2.1", "2001:db8::1"),
		"pbx.example.net": addrs("::ffff:198.51.100.7"),
	}}
	if err := l.Refresh(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.asked, ";"); got != "ip sip.example.com;ip pbx.example.net" {
		t.Errorf("lookups %q: want A and AAAA (network ip) of each hostname", got)
	}
	for _, a := range []string{"192.0.2.1", "2001:db8::1", "198.51.100.7", "::ffff:192.0.2.1", "10.0.0.5"} {
		if !l.Allowed(ip(a)) {
			t.Errorf("%s not allowed after Refresh", a)
		}
	}

	// The provider moves sip.example.com; pbx.example.net's lookup fails and keeps its set.
	r.answers["sip.example.com"] = addrs("192.0.2.9")
	r.fail = map[string]bool{"pbx.example.net": true}
	err := l.Refresh(context.Background(), r)
	if err == nil || !strings.Contains(err.Error(), "pbx.example.net") {
		t.Fatalf("Refresh with a failed lookup: %v, want an error naming the host", err)
	}
	if l.Allowed(ip("192.0.2.1")) || !l.Allowed(ip("192.0.2.9")) {
		t.Error("sip.example.com's new address did not replace its old one")
	}
	if !l.Allowed(ip("198.51.100.7")) {
		t.Error("a failed lookup dropped the last good set")
	}

	// An empty answer is a failure too: it keeps the last set.
	r.answers["sip.example.com"] = nil
	if err := l.Refresh(context.Background(), r); err == nil {
		t.Error("Refresh with an empty answer: no error")
	}
	if !l.Allowed(ip("192.0.2.9")) {
		t.Error("an empty answer dropped the last good set")
	}
}

func TestRefreshBoundsWhatOneHostnameAdds(t *testing.T) {
	l := mustParse(t, "big.example.com")
	var many []netip.Addr
	for i := range 1000 {
		many = append(many, netip.AddrFrom4([4]byte{10, 9, byte(i >> 8), byte(i)}))
	}
	if err := l.Refresh(context.Background(), &fakeResolver{answers: map[string][]netip.Addr{"big.example.com": many}}); err != nil {
		t.Fatal(err)
	}
	allowed := 0
	for _, a := range many {
		if l.Allowed(a) {
			allowed++
		}
	}
	if allowed != maxAddrsPerHost {
		t.Errorf("%d of 1000 resolved addresses allowed, want %d", allowed, maxAddrsPerHost)
	}
}

func TestAllowedDuringRefresh(t *testing.T) {
	l := mustParse(t, "sip.example.com")
	r := &fakeResolver{answers: map[string][]netip.Addr{"sip.example.com": addrs("192.0.2.1")}}
	if err := l.Refresh(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 200 {
			_ = l.Refresh(context.Background(), r)
		}
	})
	for range 2000 {
		if !l.Allowed(netip.MustParseAddr("192.0.2.1")) {
			t.Fatal("the resolved address was not allowed while a Refresh ran")
		}
	}
	wg.Wait()
}

func TestANilListAllowsNothing(t *testing.T) {
	var l *List
	if l.Allowed(netip.MustParseAddr("192.0.2.1")) || !l.Empty() || l.Refresh(context.Background(), &fakeResolver{}) != nil {
		t.Error("a nil list is not empty")
	}
	if got := l.String(); !strings.Contains(got, "empty") {
		t.Errorf("String() = %q", got)
	}
}
