package dial

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// endpoint is a SIP user agent on a loopback UDP port: a server for the requests it gets
// and a client that sends from the same socket, as the trunk's does.
type endpoint struct {
	ua     *sipgo.UserAgent
	srv    *sipgo.Server
	client *sipgo.Client
	addr   *net.UDPAddr
}

func newEndpoint(t *testing.T, handlers func(*sipgo.Server)) *endpoint {
	t.Helper()
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("test"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sipgo.NewServer(ua)
	if err != nil {
		t.Fatal(err)
	}
	if handlers != nil {
		handlers(srv)
	}
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := conn.LocalAddr().(*net.UDPAddr)
	served := make(chan error, 1)
	go func() { served <- srv.ServeUDP(conn) }()
	t.Cleanup(func() {
		_ = conn.Close()
		_ = ua.Close()
		if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("serving: %v", err)
		}
	})
	// The listener joins the transport layer on the serving goroutine; a request sent
	// before it has would leave from a socket of its own.
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	for {
		if c, err := ua.TransportLayer().GetConnection("udp", addr.String()); err == nil && c != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the UDP listener did not start")
		}
		time.Sleep(time.Millisecond) // polled, with the bound above
	}
	client, err := sipgo.NewClient(ua, sipgo.WithClientHostname("127.0.0.1"), sipgo.WithClientPort(addr.Port),
		sipgo.WithClientConnectionAddr(addr.String()))
	if err != nil {
		t.Fatal(err)
	}
	return &endpoint{ua: ua, srv: srv, client: client, addr: addr}
}

func (e *endpoint) uri(user string) sip.Uri {
	return sip.Uri{Scheme: "sip", User: user, Host: "127.0.0.1", Port: e.addr.Port}
}

// digestFields reads the name="value" pairs of an Authorization header.
var digestFields = regexp.MustCompile(`(\w+)="?([^",]*)"?`)

// validDigest checks an Authorization header's answer for user and password (MD5, no qop,
// as the fake registrar's challenge asks).
func validDigest(auth, method, user, password, realm, nonce string) bool {
	f := map[string]string{}
	for _, m := range digestFields.FindAllStringSubmatch(auth, -1) {
		f[m[1]] = m[2]
	}
	if f["username"] != user || f["realm"] != realm || f["nonce"] != nonce {
		return false
	}
	h := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	want := h(h(user+":"+realm+":"+password) + ":" + nonce + ":" + h(method+":"+f["uri"]))
	return f["response"] == want
}
