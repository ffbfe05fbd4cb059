package edge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// short are timeouts a test can outlast in a second or two.
var short = Timeouts{ReadHeader: 300 * time.Millisecond, Read: 400 * time.Millisecond, Write: 400 * time.Millisecond, Idle: 400 * time.Millisecond}

// safety bounds every wait for an event; the events come far sooner.
const safety = 15 * time.Second

// serve runs a server with t and l on 127.0.0.1 and returns its address. Its mux answers
// GET /ok, reads POST /body whole, and echoes WebSocket messages on /ws.
func serve(t *testing.T, tm Timeouts, l *Limiter) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /vouched", func(w http.ResponseWriter, r *http.Request) {
		Vouch(r)
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("POST /body", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "read")
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(context.Background())
			if err != nil {
				return
			}
			if err := c.Write(context.Background(), typ, msg); err != nil {
				return
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if l != nil {
		ln = l.Listener(ln)
	}
	hs := Server(mux, tm, l, nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close(); <-done })
	return ln.Addr().String()
}

// dialFrom opens a TCP connection to addr from the local address from (127.0.0.x).
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: safety}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// get sends GET /ok on c and reads the answer, leaving the connection open.
func get(c net.Conn, br *bufio.Reader) error { return getPath(c, br, "/ok") }

// getPath sends GET path on c and reads the answer, leaving the connection open.
func getPath(c net.Conn, br *bufio.Reader, path string) error {
	_ = c.SetDeadline(time.Now().Add(safety))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: edge.test\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}

// closedWithin waits for the server to close c and reports how long that took; it fails
// the test if the server keeps c open past limit.
func closedWithin(t *testing.T, c net.Conn, br *bufio.Reader, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v", limit)
	}
	return time.Since(start)
}

func TestIdleKeepAliveIsClosed(t *testing.T) {
	addr := serve(t, short, nil)
	c := dialFrom(t, "127.0.0.1", addr)
	br := bufio.NewReader(c)
	if err := get(c, br); err != nil {
		t.Fatal(err)
	}
	if d := closedWithin(t, c, br, safety); d < short.Idle/2 {
		t.Errorf("closed after %v, before the idle timeout %v", d, short.Idle)
	}
}

func TestSilentNewConnectionIsClosed(t *testing.T) {
	addr := serve(t, short, nil)
	c := dialFrom(t, "127.0.0.1", addr)
	closedWithin(t, c, bufio.NewReader(c), safety)
}

// TestTricklingBodyIsCutOff: a body sent a byte at a time never finishes in time; the
// handler's read fails and the connection closes once Read has passed.
func TestTricklingBodyIsCutOff(t *testing.T) {
	addr := serve(t, short, nil)
	c := dialFrom(t, "127.0.0.1", addr)
	if _, err := io.WriteString(c, "POST /body HTTP/1.1\r\nHost: edge.test\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for range tick.C {
		if _, err := c.Write([]byte{'x'}); err != nil {
			break // the server closed it
		}
		if sent++; time.Since(start) > safety {
			t.Fatalf("the trickled body was still being read after %v", safety)
		}
		// A read tells whether the server gave up: it answers or closes.
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		var b [1]byte
		if _, err := c.Read(b[:]); err == nil || !isTimeout(err) {
			break
		}
	}
	if sent >= 1000 {
		t.Fatalf("the whole body went through")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestWebSocketOutlivesTheHTTPTimeouts: an upgraded connection is not cut by the read,
// write or idle timeouts: it stays quiet for several of them, then carries messages for
// several more.
func TestWebSocketOutlivesTheHTTPTimeouts(t *testing.T) {
	l := NewLimiter(2, nil, nil)
	addr := serve(t, short, l)
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	longest := max(short.Read, short.Write, short.Idle, short.ReadHeader)
	quiet := time.NewTimer(3 * longest)
	<-quiet.C // the test is that nothing happens: no deadline may cut the socket meanwhile
	deadline := time.Now().Add(3 * longest)
	for i := 0; time.Now().Before(deadline); i++ {
		msg := fmt.Sprintf("frame %d", i)
		if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatalf("write %d after %v: %v", i, time.Since(deadline.Add(-3*longest)), err)
		}
		rctx, cancel := context.WithTimeout(ctx, safety)
		_, got, err := ws.Read(rctx)
		cancel()
		if err != nil || string(got) != msg {
			t.Fatalf("echo %d: %q %v", i, got, err)
		}
	}
	// The socket no longer counts against its address.
	if n := l.Open(netip.MustParseAddr("127.0.0.1")); n != 0 {
		t.Errorf("an upgraded connection still counts: %d open", n)
	}
	_ = ws.Close(websocket.StatusNormalClosure, "")
}

// TestCapPerAddress: one address holds at most the cap; the connections over it are
// closed at once; other addresses and exempt ones are not affected; closing frees room.
func TestCapPerAddress(t *testing.T) {
	const limit = 4
	l := NewLimiter(limit, []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32")}, nil)
	addr := serve(t, DefaultTimeouts(), l)
	hog := netip.MustParseAddr("127.0.0.2")

	var held []net.Conn
	refused := 0
	for range 3 * limit {
		c := dialFrom(t, hog.String(), addr)
		br := bufio.NewReader(c)
		if err := get(c, br); err != nil {
			refused++
			continue
		}
		held = append(held, c)
	}
	if len(held) != limit || refused != 2*limit || l.Open(hog) != limit {
		t.Fatalf("held %d, refused %d, counted %d: want %d held and the rest refused", len(held), refused, l.Open(hog), limit)
	}
	// Another address is served; an exempt one holds more than the cap.
	other := dialFrom(t, "127.0.0.3", addr)
	if err := get(other, bufio.NewReader(other)); err != nil {
		t.Errorf("another address was refused: %v", err)
	}
	for i := range 2 * limit {
		c := dialFrom(t, "127.0.0.9", addr)
		if err := get(c, bufio.NewReader(c)); err != nil {
			t.Fatalf("exempt connection %d refused: %v", i, err)
		}
	}
	// Closing one makes room for one.
	_ = held[0].Close()
	deadline := time.Now().Add(safety)
	for l.Open(hog) == limit {
		if time.Now().After(deadline) {
			t.Fatal("a closed connection still counts")
		}
		time.Sleep(5 * time.Millisecond) // the server notices the close on its own goroutine
	}
	c := dialFrom(t, hog.String(), addr)
	if err := get(c, bufio.NewReader(c)); err != nil {
		t.Errorf("after a close, a new connection was refused: %v", err)
	}
}

// TestVouchedAddressesAreNotCapped: a client the handler knows (a bridge client with its
// token) holds as many connections as it needs, for a while after it last showed it;
// every other address keeps its cap.
func TestVouchedAddressesAreNotCapped(t *testing.T) {
	const limit = 2
	l := NewLimiter(limit, nil, nil)
	clk := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	l.now = clk.Now
	addr := serve(t, DefaultTimeouts(), l)
	known, other := netip.MustParseAddr("127.0.0.4"), netip.MustParseAddr("127.0.0.5")
	hold := func(from netip.Addr, n int) (held []net.Conn) {
		for range n {
			c := dialFrom(t, from.String(), addr)
			if get(c, bufio.NewReader(c)) == nil {
				held = append(held, c)
			}
		}
		return held
	}
	held := hold(known, 2*limit)
	if len(held) != limit {
		t.Fatalf("before vouching: held %d, want the cap of %d", len(held), limit)
	}
	_ = held[0].Close()
	for deadline := time.Now().Add(safety); l.Open(known) == limit; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a closed connection still counts")
		}
	}
	// A request presents its token: its connection no longer counts, and its address may
	// open more.
	v := dialFrom(t, known.String(), addr)
	vbr := bufio.NewReader(v)
	if err := getPath(v, vbr, "/vouched"); err != nil || l.Open(known) != limit-1 {
		t.Fatalf("after vouching the address counts %d (%v), want %d", l.Open(known), err, limit-1)
	}
	if n := len(hold(known, 4*limit)); n != 4*limit {
		t.Fatalf("after vouching: held %d of %d", n, 4*limit)
	}
	if n := len(hold(other, 2*limit)); n != limit {
		t.Fatalf("another address held %d, want the cap of %d", n, limit)
	}
	// Vouching again keeps the trust; once it lapses, the address is capped again.
	clk.Advance(vouchedFor - time.Minute)
	if err := getPath(v, vbr, "/vouched"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if n := len(hold(known, 1)); n != 1 {
		t.Fatal("trust lapsed although the address vouched again")
	}
	clk.Advance(vouchedFor)
	if n := len(hold(known, 2*limit)); n != 1 {
		t.Fatalf("after the trust lapsed: held %d more, want 1 (up to the cap)", n)
	}
}

// TestWebSocketsAreNotCapped: calls are never refused for the sockets an address already
// holds.
func TestWebSocketsAreNotCapped(t *testing.T) {
	l := NewLimiter(2, nil, nil)
	addr := serve(t, DefaultTimeouts(), l)
	ctx := context.Background()
	var socks []*websocket.Conn
	for i := range 6 {
		ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
		if err != nil {
			t.Fatalf("socket %d: %v", i, err)
		}
		socks = append(socks, ws)
	}
	for _, ws := range socks {
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}
}

func TestIPv6ClientsAreCountedBySlash64(t *testing.T) {
	a, b := netip.MustParseAddr("2001:db8:1:2::1"), netip.MustParseAddr("2001:db8:1:2:ffff::9")
	if clientKey(a) != clientKey(b) {
		t.Errorf("%v and %v are one /64 but counted apart", a, b)
	}
	if c := netip.MustParseAddr("2001:db8:1:3::1"); clientKey(c) == clientKey(a) {
		t.Errorf("%v is another /64", c)
	}
	if k := clientKey(netip.MustParseAddr("::ffff:192.0.2.1")); k != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("a v4-mapped address is counted as %v", k)
	}
}
