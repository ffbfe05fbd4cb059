package browser

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/edge"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/voice"
)

func prefix(t *testing.T, remote string) netip.Prefix {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/browser/ws", nil)
	r.RemoteAddr = remote
	p := edge.Client(r, nil)
	if !p.IsValid() {
		t.Fatalf("the client of %q is not valid", remote)
	}
	return p
}

// TestRatePerAddress: each address may start Burst calls at once, then one per Every; other
// addresses are not affected; an IPv6 /64 is one address; the refusal says when to retry.
func TestRatePerAddress(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	l := newLimiter(0, Rate{Burst: 2, Every: 30 * time.Second}, clk)
	a, b := prefix(t, "192.0.2.7:5000"), prefix(t, "[2001:db8:1:2::7]:5000")
	for i := range 2 {
		if _, refused := l.admit(a); refused != "" {
			t.Fatalf("call %d from a: %s", i+1, refused)
		}
	}
	_, refused := l.admit(a)
	if refused != "too many calls from your address: try again in 30 s" {
		t.Errorf("third call from a: %q", refused)
	}
	if _, refused := l.admit(prefix(t, "192.0.2.7:6000")); refused == "" {
		t.Error("another port of the same address escaped the rate")
	}
	for i, remote := range []string{"[2001:db8:1:2::7]:5000", "[2001:db8:1:2:ffff::1]:1"} {
		if _, refused := l.admit(prefix(t, remote)); refused != "" {
			t.Fatalf("call %d from b's /64: %s", i+1, refused)
		}
	}
	if _, refused := l.admit(b); refused == "" {
		t.Error("a third call from the same /64 was admitted")
	}
	if _, refused := l.admit(prefix(t, "[2001:db8:1:3::7]:5000")); refused != "" {
		t.Errorf("another /64: %s", refused)
	}
	clk.Advance(20 * time.Second)
	if _, refused := l.admit(a); refused != "too many calls from your address: try again in 10 s" {
		t.Errorf("20 s later: %q", refused)
	}
	clk.Advance(10 * time.Second)
	if _, refused := l.admit(a); refused != "" {
		t.Errorf("30 s later: %s", refused)
	}
	if _, refused := l.admit(a); refused == "" {
		t.Error("one interval refilled more than one call")
	}
	clk.Advance(time.Hour) // a long pause refills the burst, no more
	for i := range 3 {
		_, refused := l.admit(a)
		if got := refused == ""; got != (i < 2) {
			t.Errorf("after an hour, call %d: refused %q", i+1, refused)
		}
	}
}

// TestBrowserCap: at most max browser calls run at once, from any address; a call's end
// frees its place (once, however often release is called); an attempt refused for the cap
// does not use up the caller's rate.
func TestBrowserCap(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	l := newLimiter(2, Rate{Burst: 2, Every: time.Hour}, clk)
	r1, refused := l.admit(prefix(t, "192.0.2.1:1"))
	if refused != "" {
		t.Fatal(refused)
	}
	if _, refused := l.admit(prefix(t, "192.0.2.2:1")); refused != "" {
		t.Fatal(refused)
	}
	c := prefix(t, "192.0.2.3:1")
	for range 5 {
		if _, refused := l.admit(c); refused != "too many browser calls at once (the limit is 2): try again later" {
			t.Fatalf("a third call: %q", refused)
		}
	}
	r1()
	r1()
	if _, refused := l.admit(c); refused != "" {
		t.Fatalf("after a call ended: %q", refused)
	}
	if _, refused := l.admit(c); refused == "" || !strings.Contains(refused, "browser calls at once") {
		t.Fatalf("release twice freed two places: %q", refused)
	}
}

// TestLimiterForgetsIdleAddresses: the limiter's memory stays bounded: past sweepAt
// addresses it drops those whose bucket has refilled, and keeps those still limited.
func TestLimiterForgetsIdleAddresses(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	l := newLimiter(0, Rate{Burst: 1, Every: time.Minute}, clk)
	for i := range sweepAt {
		l.admit(prefix(t, fmt.Sprintf("10.%d.%d.1:1", i/256, i%256)))
	}
	clk.Advance(time.Minute) // every bucket has refilled
	limited := prefix(t, "10.0.0.1:1")
	if _, refused := l.admit(limited); refused != "" {
		t.Fatal(refused)
	}
	l.admit(prefix(t, "203.0.113.1:1")) // a new address: the sweep
	if n := len(l.buckets); n != 2 {
		t.Errorf("%d addresses remembered after the sweep, want 2 (the limited one and the new one)", n)
	}
	if _, refused := l.admit(limited); refused == "" {
		t.Error("the sweep forgot an address that was still limited")
	}
}

// holdingAdmit admits every call and holds it until the test ends it.
type holdingAdmit struct {
	mu    sync.Mutex
	calls []chan struct{}
	seen  chan struct{}
}

func (h *holdingAdmit) admit(voice.Leg) (<-chan struct{}, error) {
	done := make(chan struct{})
	h.mu.Lock()
	h.calls = append(h.calls, done)
	h.mu.Unlock()
	h.seen <- struct{}{}
	return done, nil
}

func (h *holdingAdmit) end(i int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.calls[i])
}

// TestRefusalReachesThePage: a call refused for the browser cap or the address's rate is
// closed with 1013 and a reason the page shows; Admit never sees it.
func TestRefusalReachesThePage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := &holdingAdmit{seen: make(chan struct{}, 10)}
	srv, port := serveChannel(t, "", Options{Admit: h.admit, MaxCalls: 1, Rate: Rate{Burst: 2, Every: time.Hour}})
	url := "ws://" + srv.Listener.Addr().String() + "/browser/ws"
	origin := http.Header{"Origin": {"http://127.0.0.1:" + port}}
	dial := func() *websocket.Conn {
		t.Helper()
		conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: origin})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.CloseNow() })
		return conn
	}
	// outcome waits for the call on conn to be admitted, or for the server to close it.
	outcome := func(conn *websocket.Conn) (admitted bool, ce websocket.CloseError) {
		t.Helper()
		closed := make(chan error, 1)
		go func() {
			_, _, err := conn.Read(ctx)
			closed <- err
		}()
		select {
		case <-h.seen:
			return true, ce
		case err := <-closed:
			if !errors.As(err, &ce) {
				t.Fatalf("%v, want a close", err)
			}
			return false, ce
		}
	}
	if admitted, ce := outcome(dial()); !admitted {
		t.Fatalf("the first call: %v", ce)
	}
	if _, ce := outcome(dial()); ce.Code != websocket.StatusTryAgainLater || ce.Reason != "too many browser calls at once (the limit is 1): try again later" {
		t.Errorf("over the cap: %v", ce)
	}
	// An ended call's place comes back once its handler has seen it end; until then the
	// cap still refuses, which does not use up the rate.
	h.end(0)
	for {
		admitted, ce := outcome(dial())
		if admitted {
			break
		}
		if !strings.Contains(ce.Reason, "at once") {
			t.Fatalf("after the first call ended: %v", ce)
		}
	}
	h.end(1)
	for {
		admitted, ce := outcome(dial())
		if admitted {
			t.Fatal("a third call from one address within the hour was admitted")
		}
		if strings.Contains(ce.Reason, "at once") {
			continue
		}
		if ce.Code != websocket.StatusTryAgainLater || ce.Reason != "too many calls from your address: try again in 3600 s" {
			t.Errorf("over the rate: %v", ce)
		}
		break
	}
	if n := len(h.calls); n != 2 {
		t.Errorf("Admit saw %d calls, want 2", n)
	}
}
