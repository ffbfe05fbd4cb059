// Package uatest gives the tests of Handset's SIP client packages (dial, register) what
// stands on the other side of the wire: a SIP user agent on a loopback UDP port, with a
// server for the requests it receives and a client that sends from the same socket, as
// the trunk's does; and a checker of digest answers for fake registrars and proxies.
package uatest

import (
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

// startBound bounds how long the listener may take to join the transport layer.
const startBound = 10 * time.Second

// Endpoint is a SIP user agent on a loopback UDP port, closed when the test ends.
type Endpoint struct {
	UA     *sipgo.UserAgent
	Server *sipgo.Server
	Client *sipgo.Client
	Addr   *net.UDPAddr
}

// New starts an Endpoint; handlers, when set, registers the server's request handlers
// before it serves.
func New(t testing.TB, handlers func(*sipgo.Server)) *Endpoint {
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
	deadline := time.Now().Add(startBound)
	for {
		if c, err := ua.TransportLayer().GetConnection("udp", addr.String()); err == nil && c != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the UDP listener did not start")
		}
		time.Sleep(time.Millisecond) // polled, with the bound above
	}
	client, err := sipgo.NewClient(ua, sipgo.WithClientHostname("127.0.0.1"), sipgo.WithClientPort(addr.Port),
		sipgo.WithClientConnectionAddr(addr.String()))
	if err != nil {
		t.Fatal(err)
	}
	return &Endpoint{UA: ua, Server: srv, Client: client, Addr: addr}
}

// URI is user at the endpoint's address.
func (e *Endpoint) URI(user string) sip.Uri {
	return sip.Uri{Scheme: "sip", User: user, Host: "127.0.0.1", Port: e.Addr.Port}
}

// IgnoreSipgoLeak is the goleak option for the one goroutine sipgo leaves behind: its
// transport layer has no closed state, so a retransmission timer of a transaction still
// running when a test's user agent closes opens a socket nobody closes.
const IgnoreSipgoLeak = "github.com/emiago/sipgo/sip.(*TransportUDP).readUDPConnection"

// digestFields reads the name="value" pairs of an Authorization header.
var digestFields = regexp.MustCompile(`(\w+)="?([^",]*)"?`)

// ValidDigest checks the digest answer in an Authorization or Proxy-Authorization header
// for user and password, to a challenge of realm and nonce without qop, MD5.
func ValidDigest(auth, method, user, password, realm, nonce string) bool {
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
