//go:build linux

package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/edge"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/testpeer"
)

// childEnv marks the test binary started as `handset serve` by TestServeHelperProcess.
const childEnv = "HANDSET_TEST_SERVE_CHILD"

// TestServeHelperProcess is `handset serve` in a child process: the flood test starts the
// test binary again, under a low open-file limit, to run only this. (Linux only: the
// flood plays distinct clients from 127.0.0.x, which only Linux routes without setup.)
func TestServeHelperProcess(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("the flood test runs this in a child process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	code := Main(ctx, []string{"serve"}, System())
	stop()
	os.Exit(code) // the child's only test: no leak check of a process that is ending
}

// Flood sizes: attackers from 10 addresses, each opening 250 connections (half of them
// idle keep-alives, half trickling a request body a byte every 2 s): 2,500 connections,
// far more than the 1,024 files the server may open.
const (
	floodAddrs     = 10
	floodPerAddr   = 250
	floodFileLimit = 1024
	trickleEvery   = 2 * time.Second
)

// floodConn is one attacking connection.
type floodConn struct {
	c    net.Conn
	br   *bufio.Reader
	slow bool // trickles a body; else idle after one request
}

// alive reports whether the server still holds f open and has sent nothing: a
// non-blocking peek at the socket finds no data and no end of stream.
func (f *floodConn) alive() bool {
	raw, err := f.c.(syscall.Conn).SyscallConn()
	if err != nil || f.br.Buffered() > 0 {
		return false
	}
	_ = f.c.SetReadDeadline(time.Time{}) // a deadline passed would stop the look before it is taken
	open := false
	_ = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = errors.Is(err, syscall.EAGAIN)
		return true // one look, never a wait
	})
	return open
}

// TestFloodOfIdleAndSlowConnections: thousands of idle and trickling connections from
// several addresses cannot keep a signed webhook from another address waiting. The server
// runs as its own process with a hard limit of 1,024 open files; each attacking address is
// held to edge.DefaultPerAddress connections and the rest are closed at once, so the
// server keeps descriptors for genuine requests.
func TestFloodOfIdleAndSlowConnections(t *testing.T) {
	testpeer.Slow(t, "floods a serve process with connections it must outlast")
	r, env := withFakes(t, nil)
	addr, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	env = override(env, []string{
		"HANDSET_LISTEN=" + addr,
		// Loopback is trusted (and uncapped) by default; here only 127.0.0.1 is, so the
		// other 127.0.0.x addresses play distinct clients.
		"HANDSET_TRUSTED_PROXIES=127.0.0.1/32",
		"HANDSET_DATA_DIR=" + r.dataDir,
		"HANDSET_LOG_LEVEL=info",
	})
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `ulimit -n "$1" && shift && exec "$@"`, "sh",
		fmt.Sprint(floodFileLimit), os.Args[0], "-test.run=^TestServeHelperProcess$")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, childEnv + "=1"}, env...)
	cmd.Dir = dir
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			return err
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return errors.New("serve did not stop within 60 s of SIGTERM")
		}
	}
	t.Cleanup(func() { _ = stop() })
	base := "http://" + addr
	waitUntil(t, 60*time.Second, "the child serve to be ready", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("serve exited (%v):\n%s", err, logs)
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, nil)

	// The flood: every address opens its connections, alternating idle and slow, and sends
	// each its request at once; then the idle ones' answers are collected together.
	conns := make([][]*floodConn, floodAddrs)
	var wg sync.WaitGroup
	for i := range floodAddrs {
		from := fmt.Sprintf("127.0.0.%d", i+2)
		wg.Go(func() { conns[i] = openFlood(t, from, addr) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	collect := time.Now().Add(5 * time.Second)
	for _, cs := range conns {
		for _, f := range cs {
			if f.slow {
				continue
			}
			_ = f.c.SetReadDeadline(collect)
			if resp, err := http.ReadResponse(f.br, nil); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
	// The slow ones trickle on, a byte every 2 s, until the test ends.
	trickleCtx, stopTrickle := context.WithCancel(context.Background())
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		tick := time.NewTicker(trickleEvery)
		defer tick.Stop()
		for {
			select {
			case <-trickleCtx.Done():
				return
			case <-tick.C:
			}
			for _, cs := range conns {
				for _, f := range cs {
					if f.slow {
						_ = f.c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
						_, _ = f.c.Write([]byte{'x'})
					}
				}
			}
		}
	}()
	defer func() {
		stopTrickle()
		<-trickled
		for _, cs := range conns {
			for _, f := range cs {
				_ = f.c.Close()
			}
		}
	}()

	// A genuine call's webhook, from an address of its own, answers promptly: now, and
	// again after a few trickles.
	genuine := func(round int) {
		t.Helper()
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.200")}}
		tr := &http.Transport{DialContext: dialer.DialContext}
		defer tr.CloseIdleConnections()
		start := time.Now()
		resp, err := twiliocaller.PostWebhook(context.Background(), twiliocaller.Options{
			BaseURL: base, AuthToken: r.token, CallSid: twiliocaller.NewSid("CA"),
			HTTPClient: &http.Client{Transport: tr}, WebhookTimeout: 5 * time.Second,
		}, nil)
		took := time.Since(start)
		if err != nil || resp.Status != http.StatusOK || !strings.Contains(string(resp.Body), "<Stream") {
			t.Fatalf("webhook %d during the flood: status %d err %v after %v:\n%s", round, resp.Status, err, took, tail(logs.String(), 30))
		}
		t.Logf("webhook %d during the flood answered in %v", round, took)
	}
	genuine(1)
	held := func() (idle, slow, closed int) {
		for _, cs := range conns {
			for _, f := range cs {
				switch {
				case !f.alive():
					closed++
				case f.slow:
					slow++
				default:
					idle++
				}
			}
		}
		return idle, slow, closed
	}
	idle, slow, closed := held()
	t.Logf("the server holds %d idle and %d trickling connections and closed %d of %d", idle, slow, closed, floodAddrs*floodPerAddr)
	if want := floodAddrs * edge.DefaultPerAddress; idle+slow != want || idle == 0 || slow == 0 {
		t.Errorf("held %d idle + %d slow connections, want %d (%d from each address)", idle, slow, want, edge.DefaultPerAddress)
	}
	wait := time.NewTimer(3 * trickleEvery)
	<-wait.C // the flood goes on: the server still holds it, a byte every 2 s, and still answers
	genuine(2)
	if idle2, slow2, _ := held(); idle2 != idle || slow2 != slow {
		t.Errorf("the held connections changed while trickling: %d idle %d slow, were %d and %d", idle2, slow2, idle, slow)
	}

	if err := stop(); err != nil {
		t.Errorf("serve: %v\n%s", err, tail(logs.String(), 30))
	}
	out := logs.String()
	for _, want := range []string{
		fmt.Sprintf(`msg="open-file limit" limit=%d`, floodFileLimit),
		`msg="refused connections over the cap per client address"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("serve's log lacks %s:\n%s", want, tail(out, 30))
		}
	}
}

// openFlood opens floodPerAddr connections from the local address from to addr,
// alternating idle and slow, and sends each its request: a whole GET for the idle ones,
// the headers and first byte of a 100 kB webhook body for the slow ones.
func openFlood(t *testing.T, from, addr string) []*floodConn {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	out := make([]*floodConn, 0, floodPerAddr)
	for i := range floodPerAddr {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Errorf("%s: dial %d: %v", from, i, err)
			return out
		}
		f := &floodConn{c: c, br: bufio.NewReader(c), slow: i%2 == 1}
		req := "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
		if f.slow {
			req = "POST /twilio/voice HTTP/1.1\r\nHost: " + addr +
				"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\nx"
		}
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = io.WriteString(c, req) // a connection the server closed fails later, or here
		out = append(out, f)
	}
	return out
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
