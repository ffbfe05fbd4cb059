package sip

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/digestauth"
	"github.com/handset-voice/handset/internal/registry"
)

// readInboundAuth reads the inbound digest credentials into o: both or neither.
func readInboundAuth(s registry.Settings, o *Options) error {
	o.InboundUsername, o.InboundPassword = strings.TrimSpace(s.Value(SettingInboundUsername)), s.Value(SettingInboundPassword)
	switch {
	case o.InboundUsername != "" && o.InboundPassword == "":
		return fmt.Errorf("%s: %w", SettingInboundPassword, errors.New("is needed with "+SettingInboundUsername))
	case o.InboundUsername == "" && o.InboundPassword != "":
		return fmt.Errorf("%s: %w", SettingInboundUsername, errors.New("is needed with "+SettingInboundPassword))
	}
	return nil
}

// Inbound digest authentication. A source HANDSET_SIP_ALLOW names is let in on its
// address; with HANDSET_SIP_INBOUND_USERNAME set, a caller from anywhere else is
// challenged (401) and let in when it proves the password. Its messages pass the gate
// within the same per-source rate as strangers' 403s until it is admitted; then the
// requests of its call (ACK, BYE, re-INVITE, UPDATE) from its address are its own, for that
// call only.

// authRealm is the realm Handset's challenges name.
const authRealm = "handset"

// inboundAuth checks the credentials of callers outside the allow-list and remembers the
// addresses of the calls it admitted.
type inboundAuth struct {
	verifier *digestauth.Verifier

	mu    sync.Mutex
	peers map[netip.Addr]int // the authenticated calls in progress from each address
}

// newInboundAuth is the trunk's inbound authentication; nil without credentials.
func newInboundAuth(o Options) (*inboundAuth, error) {
	if o.InboundUsername == "" {
		return nil, nil
	}
	v, err := digestauth.New(digestauth.Config{Realm: authRealm, Username: o.InboundUsername, Password: o.InboundPassword})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SettingInboundUsername, err)
	}
	return &inboundAuth{verifier: v, peers: map[netip.Addr]int{}}, nil
}

// inCall reports whether src is the address of an authenticated call in progress: its
// messages pass the gate unlimited (the call's handlers then check that they are its).
func (a *inboundAuth) inCall(src netip.Addr) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peers[src] > 0
}

// strangersAre says what becomes of strangers' requests, for the gate's log line: with
// credentials their INVITEs are challenged first.
func (a *inboundAuth) strangersAre() string {
	if a == nil {
		return "refused"
	}
	return "challenged (digest) or refused"
}

// hold notes an authenticated call from src; the function it returns forgets it, once.
func (a *inboundAuth) hold(src netip.Addr) (release func()) {
	a.mu.Lock()
	a.peers[src]++
	a.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.peers[src]--; a.peers[src] <= 0 {
				delete(a.peers, src)
			}
		})
	}
}

// authenticate decides a new INVITE from a source the allow-list does not name: true when
// its credentials are right; else it is answered here, 401 with challenges when it has
// none or they are late, 403 when they are wrong (or Handset takes no credentials).
func (t *Trunk) authenticate(req *sip.Request, tx sip.ServerTransaction) bool {
	if t.auth == nil {
		t.refuse(req, tx)
		return false
	}
	authorization := ""
	if h := req.GetHeader("Authorization"); h != nil {
		authorization = h.Value()
	}
	now := time.Now()
	err := t.auth.verifier.Check(authorization, string(req.Method), callID(req), now)
	switch {
	case err == nil:
		return true
	case errors.Is(err, digestauth.ErrNoCredentials), errors.Is(err, digestauth.ErrStale):
		res := sip.NewResponseFromRequest(req, sip.StatusUnauthorized, "Unauthorized", nil)
		for _, c := range t.auth.verifier.Challenges(callID(req), now, errors.Is(err, digestauth.ErrStale)) {
			res.AppendHeader(sip.NewHeader("WWW-Authenticate", c))
		}
		_ = tx.Respond(res)
	default:
		t.refuse(req, tx)
	}
	return false
}

// admits reports whether req may act in call c: it comes from a source the allow-list
// names, or c was admitted by digest and req comes from the address c's INVITE came from.
func (t *Trunk) admits(c *inboundCall, req *sip.Request) bool {
	if t.allowed(req) {
		return true
	}
	return c != nil && c.authPeer.IsValid() && c.authPeer == sourceAddr(req)
}

// holdAuthenticated notes an inbound call admitted by digest (from a source the
// allow-list does not name), so its peer's messages reach it; release forgets it.
func (t *Trunk) holdAuthenticated(c *inboundCall, req *sip.Request) (release func()) {
	if t.auth == nil || t.allowed(req) {
		return func() {}
	}
	c.authPeer = sourceAddr(req)
	return t.auth.hold(c.authPeer)
}
