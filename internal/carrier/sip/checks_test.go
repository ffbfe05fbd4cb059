package sip

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/dial/uatest"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// checkSettings is registry.Settings from a map; HANDSET_MAX_CALLS is read as a number.
type checkSettings map[string]string

func (m checkSettings) Value(env string) string       { return m[env] }
func (m checkSettings) Duration(string) time.Duration { return 0 }
func (m checkSettings) Int(env string) int            { n, _ := strconv.Atoi(m[env]); return n }
func (m checkSettings) Bool(string) bool              { return false }
func (m checkSettings) Source(string) string          { return "test" }

// fakeResolver resolves the hostnames it holds and fails every other.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// checkBound is the timeout doctor gives each check in these tests.
const checkBound = 4 * time.Second

// runChecks runs the trunk's checks with settings s and returns their results by name.
func runChecks(t *testing.T, s checkSettings, r fakeResolver) map[string]doctor.Result {
	t.Helper()
	results := doctor.Run(context.Background(), trunkChecks("carrier", s, r), doctor.Options{Timeout: checkBound})
	out := map[string]doctor.Result{}
	for _, res := range results {
		out[res.Name] = res
	}
	return out
}

// expect checks one result's status and the words its detail and fix hold.
func expect(t *testing.T, got map[string]doctor.Result, name string, status doctor.Status, words ...string) {
	t.Helper()
	r, ok := got[name]
	if !ok {
		t.Fatalf("no %q result in %v", name, got)
	}
	if r.Status != status {
		t.Errorf("%s: %s (%s; fix: %s), want %s", name, r.Status, r.Detail, r.Fix, status)
	}
	for _, w := range words {
		if !strings.Contains(r.Detail+" | "+r.Fix, w) {
			t.Errorf("%s: %q (fix %q) lacks %q", name, r.Detail, r.Fix, w)
		}
	}
}

// freeLoopbackPort is a port free on loopback over UDP and TCP when it was asked.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		conn, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := conn.LocalAddr().(*net.UDPAddr).Port
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		_ = conn.Close()
		if err == nil {
			_ = ln.Close()
			return port
		}
	}
	t.Fatal("no port free on both transports")
	return 0
}

// trunkSettings are settings of a trunk on loopback that the local checks pass.
func trunkSettings(port int) checkSettings {
	return checkSettings{
		SettingAllow: "127.0.0.1", SettingListen: fmt.Sprintf("127.0.0.1:%d", port),
		SettingRTPPorts: "32000-32099", "HANDSET_MAX_CALLS": "10",
	}
}

func TestChecksSkipAnUnconfiguredTrunk(t *testing.T) {
	got := runChecks(t, checkSettings{SettingListen: "nonsense"}, nil)
	if len(got) != 1 {
		t.Fatalf("want one result, got %v", got)
	}
	expect(t, got, "sip trunk", doctor.Skip, SettingAllow)
}

func TestChecksOfAHealthyTrunk(t *testing.T) {
	s := trunkSettings(freeLoopbackPort(t))
	s[SettingAllow], s[SettingPublicAddr] = "127.0.0.1,trunk.example.net", "203.0.113.7"
	got := runChecks(t, s, fakeResolver{"trunk.example.net": {netip.MustParseAddr("192.168.7.7")}})
	expect(t, got, "sip settings", doctor.OK, "127.0.0.1:", "udp and tcp", "32000-32099")
	expect(t, got, "sip listen port", doctor.OK, "free over udp and tcp")
	expect(t, got, "sip public address", doctor.OK, "203.0.113.7")
	expect(t, got, "rtp ports", doctor.OK, "50 even ports")
	expect(t, got, "sip allow-list", doctor.OK, "trunk.example.net (192.168.7.7)")
	expect(t, got, "sip codecs", doctor.OK, "PCMU, PCMA")
	expect(t, got, "sip registration", doctor.Skip, SettingRegistrar)
}

func TestChecksNameEveryBadSetting(t *testing.T) {
	s := checkSettings{SettingAllow: "10.0.0.0/0", SettingRTPPorts: "9-8", SettingCodecs: "OPUS"}
	got := runChecks(t, s, nil)
	expect(t, got, "sip settings", doctor.Fail, SettingAllow, SettingRTPPorts, SettingCodecs, DocsPage)
	for _, name := range []string{"sip listen port", "rtp ports", "sip allow-list", "sip registration"} {
		expect(t, got, name, doctor.Skip, "see sip settings")
	}
}

func TestListenPortInUse(t *testing.T) {
	t.Run("by a running Handset", func(t *testing.T) {
		tr := startTrunk(t, "127.0.0.1", newAnswering(1))
		got := runChecks(t, trunkSettings(int(tr.Addr().Port())), nil)
		expect(t, got, "sip listen port", doctor.Warn, "running Handset", "udp, tcp", SettingListen)
	})
	t.Run("by a Handset that refuses this machine", func(t *testing.T) {
		tr := startTrunk(t, "192.0.2.1", newAnswering(1))
		healthz := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				fmt.Fprintln(w, "ok")
				return
			}
			http.NotFound(w, r)
		}))
		defer healthz.Close()
		s := trunkSettings(int(tr.Addr().Port()))
		s[settingHTTPListen] = strings.TrimPrefix(healthz.URL, "http://")
		expect(t, runChecks(t, s, nil), "sip listen port", doctor.Warn, "running Handset", "403", settingHTTPListen)

		// Without a Handset's HTTP server beside it, a 403 says nothing of who answered.
		s[settingHTTPListen] = "127.0.0.1:1"
		expect(t, runChecks(t, s, nil), "sip listen port", doctor.Fail, "another program", "403", "does not name this machine")
	})
	t.Run("by another SIP server", func(t *testing.T) {
		other := uatest.New(t, func(srv *sipgo.Server) {
			srv.OnOptions(func(req *sip.Request, tx sip.ServerTransaction) {
				res := sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil)
				res.AppendHeader(sip.NewHeader("Server", "OtherPBX 1.0"))
				_ = tx.Respond(res)
			})
		})
		s := trunkSettings(other.Addr.Port)
		s[SettingTransports] = "udp"
		got := runChecks(t, s, nil)
		expect(t, got, "sip listen port", doctor.Fail, "another program", "OtherPBX", "ss -lntup", SettingListen)
	})
	t.Run("by a program that is not SIP", func(t *testing.T) {
		conn, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		s := trunkSettings(conn.LocalAddr().(*net.UDPAddr).Port)
		s[SettingTransports] = "udp"
		got := runChecks(t, s, nil)
		expect(t, got, "sip listen port", doctor.Fail, "does not answer SIP OPTIONS")
	})
}

func TestPublicAddressBehindNAT(t *testing.T) {
	for _, c := range []struct {
		name   string
		set    checkSettings
		status doctor.Status
		words  []string
	}{
		{"a private address and a provider's host", checkSettings{SettingAllow: "sip.provider.example"},
			doctor.Warn, []string{"192.168.1.10", "not public", "sip.provider.example", SettingPublicAddr, "32000-32099"}},
		{"a private address and a public block", checkSettings{SettingAllow: "198.51.100.0/24,10.1.1.1"},
			doctor.Warn, []string{"198.51.100.0/24"}},
		{"a private address and a public registrar", checkSettings{SettingRegistrar: "sip:203.0.113.9", SettingUsername: "u"},
			doctor.Warn, []string{"203.0.113.9"}},
		{"a private address and a private trunk", checkSettings{SettingAllow: "192.168.1.0/24,localhost"},
			doctor.OK, []string{"192.168.1.10", "the address of " + SettingListen}},
		{"the public address set", checkSettings{SettingAllow: "sip.provider.example", SettingPublicAddr: "203.0.113.7"},
			doctor.OK, []string{"203.0.113.7 (" + SettingPublicAddr + ")"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.set[SettingListen] = "192.168.1.10:5060"
			c.set[SettingRTPPorts] = "32000-32099"
			o, err := ReadOptions(c.set)
			if err != nil {
				t.Fatal(err)
			}
			ch := &checker{settings: c.set, opts: o}
			expect(t, map[string]doctor.Result{"a": ch.publicAddr(context.Background())}, "a", c.status, c.words...)
		})
	}
}

func TestRTPPorts(t *testing.T) {
	t.Run("fewer ports than calls", func(t *testing.T) {
		s := trunkSettings(freeLoopbackPort(t))
		s["HANDSET_MAX_CALLS"] = "200"
		expect(t, runChecks(t, s, nil), "rtp ports", doctor.Warn, "50 even ports", "HANDSET_MAX_CALLS (200)", "32000-32399")
	})
	t.Run("every port taken", func(t *testing.T) {
		for _, port := range []int{32100, 32102} {
			conn, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				t.Skipf("port %d is not free here: %v", port, err)
			}
			defer conn.Close()
		}
		s := trunkSettings(freeLoopbackPort(t))
		s[SettingRTPPorts], s["HANDSET_MAX_CALLS"] = "32100-32103", "1"
		expect(t, runChecks(t, s, nil), "rtp ports", doctor.Fail, "no free RTP port", SettingRTPPorts)
	})
}

func TestAllowListHostnameThatDoesNotResolve(t *testing.T) {
	s := trunkSettings(freeLoopbackPort(t))
	s[SettingAllow] = "127.0.0.1,gone.example.net"
	expect(t, runChecks(t, s, fakeResolver{}), "sip allow-list", doctor.Fail, "gone.example.net", SettingAllow)
}

func TestOneCodecWarns(t *testing.T) {
	s := trunkSettings(freeLoopbackPort(t))
	s[SettingCodecs] = "PCMA"
	expect(t, runChecks(t, s, nil), "sip codecs", doctor.Warn, "lacks PCMA", "488", DefaultCodecs)
}

// checkRegistrar is a registrar for the registration check: a digest challenge for user
// and password, 403 to a wrong answer, and every REGISTER's Expires noted.
func checkRegistrar(t *testing.T, user, password string) (*uatest.Endpoint, chan int) {
	const realm, nonce = "doctor.test", "n0nce"
	expires := make(chan int, 16)
	e := uatest.New(t, func(srv *sipgo.Server) {
		srv.OnRegister(func(req *sip.Request, tx sip.ServerTransaction) {
			auth := req.GetHeader("Authorization")
			if auth == nil {
				res := sip.NewResponseFromRequest(req, sip.StatusUnauthorized, "Unauthorized", nil)
				res.AppendHeader(sip.NewHeader("WWW-Authenticate", fmt.Sprintf(`Digest realm="%s", nonce="%s", algorithm=MD5`, realm, nonce)))
				_ = tx.Respond(res)
				return
			}
			if !uatest.ValidDigest(auth.Value(), "REGISTER", user, password, realm, nonce) {
				_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusForbidden, "Forbidden", nil))
				return
			}
			n := -1
			if h := req.GetHeader("Expires"); h != nil {
				n, _ = strconv.Atoi(h.Value())
			}
			expires <- n
			res := sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil)
			contact := req.Contact().Clone()
			contact.Params = sip.NewParams()
			contact.Params.Add("expires", strconv.Itoa(n))
			res.AppendHeader(contact)
			_ = tx.Respond(res)
		})
	})
	return e, expires
}

func registrarSettings(t *testing.T, registrar, password string) checkSettings {
	s := trunkSettings(freeLoopbackPort(t))
	delete(s, SettingAllow)
	s[SettingRegistrar], s[SettingUsername], s[SettingPassword] = registrar, "handset", password
	return s
}

func TestRegistrationCheck(t *testing.T) {
	r, expires := checkRegistrar(t, "handset", "s3cret")
	registrar := fmt.Sprintf("sip:127.0.0.1:%d", r.Addr.Port)

	t.Run("registers and removes its binding", func(t *testing.T) {
		got := runChecks(t, registrarSettings(t, registrar, "s3cret"), nil)
		expect(t, got, "sip registration", doctor.OK, "registered handset at "+registrar, "granted 1m0s", "removed")
		for _, want := range []int{int(registrationExpires / time.Second), 0} {
			select {
			case n := <-expires:
				if n != want {
					t.Errorf("a REGISTER asked Expires %d, want %d", n, want)
				}
			default:
				t.Errorf("no authorized REGISTER with Expires %d", want)
			}
		}
	})
	t.Run("a wrong password", func(t *testing.T) {
		got := runChecks(t, registrarSettings(t, registrar, "wrong"), nil)
		expect(t, got, "sip registration", doctor.Fail, "refused the credentials", SettingUsername, SettingPassword)
	})
	t.Run("nobody there", func(t *testing.T) {
		silent, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		away := fmt.Sprintf("sip:127.0.0.1:%d", silent.LocalAddr().(*net.UDPAddr).Port)
		got := runChecks(t, registrarSettings(t, away, "s3cret"), nil)
		expect(t, got, "sip registration", doctor.Fail, "cannot reach the registrar "+away, SettingRegistrar)
	})
}

// Against kamailio: the right credentials register and the binding is removed; a wrong
// password is said to be one.
func TestRegistrationCheckWithKamailio(t *testing.T) {
	testpeer.Slow(t, "starts kamailio")
	k, err := sippeer.StartKamailio(t, sippeer.KamailioOptions{Users: map[string]string{"handset": "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, transport := range []string{"udp", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			registrar := "sip:" + k.Addr() + ";transport=" + transport
			got := runChecks(t, registrarSettings(t, registrar, "s3cret"), nil)
			expect(t, got, "sip registration", doctor.OK, "registered handset", "removed")
			got = runChecks(t, registrarSettings(t, registrar, "wrong"), nil)
			expect(t, got, "sip registration", doctor.Fail, "refused the credentials", SettingPassword)
		})
	}
	if t.Failed() {
		t.Log(k.Log())
	}
}

// TestProbeOverTCPTakesAPortOfItsOwn: doctor's probe reads answers on an ephemeral UDP
// port; a TCP connection it opens must not bind that port's number, which any TCP socket
// may already hold (CI saw the registration check fail so).
func TestProbeOverTCPTakesAPortOfItsOwn(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	probe, err := newProbeUA(lo, "tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	// Hold the number for TCP (if some socket holds it already, so much the better).
	if squatter, err := net.Listen("tcp", probe.addr.String()); err == nil {
		defer squatter.Close()
	}
	peer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := peer.Accept(); err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	to := peer.Addr().(*net.TCPAddr).AddrPort()
	uri := sip.Uri{Scheme: "sip", Host: to.Addr().String(), Port: int(to.Port()), UriParams: sip.NewParams()}
	uri.UriParams.Add("transport", "tcp")
	_, err = probe.client.Do(ctx, sip.NewRequest(sip.OPTIONS, uri))
	select {
	case c := <-accepted:
		c.Close()
	default:
		t.Fatalf("the probe did not connect over TCP: %v", err)
	}
}
