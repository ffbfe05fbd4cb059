package register

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/dial/uatest"
)

// waitBound is how long a test waits for something that should happen at once.
const waitBound = 10 * time.Second

const (
	fakeRealm = "fake.test"
	fakeNonce = "n0nce"
)

// fakeRegistrar is a registrar written for the tests: it challenges, checks the digest
// answer, grants what it is told to, asks for a longer expiry, or goes silent.
type fakeRegistrar struct {
	*uatest.Endpoint

	mu sync.Mutex
	// user and password are the account; a wrong answer is refused 403, or challenged
	// again when rechallenge is set.
	user, password string
	rechallenge    bool
	// grant, when non-zero, is the expiry granted in seconds (else what was asked).
	grant int
	// minExpires, when non-zero, refuses shorter expiries with 423.
	minExpires int
	// away drops every request unanswered.
	away bool
	// unavailable, when set, answers 503 with this Retry-After.
	unavailable string
	// nonce is the challenge's; staleOnce answers the first valid answer with a new nonce
	// and stale=true, as a registrar whose nonce expired does.
	nonce     string
	staleOnce bool

	got chan seen
}

// seen is one REGISTER as the registrar received it.
type seen struct {
	callID     string
	cseq       uint32
	expires    int // -1 without an Expires header
	authorized bool
	status     int // what it answered; 0 when it did not
}

func newFakeRegistrar(t *testing.T, user, password string) *fakeRegistrar {
	r := &fakeRegistrar{user: user, password: password, nonce: fakeNonce, got: make(chan seen, 64)}
	r.Endpoint = uatest.New(t, func(srv *sipgo.Server) { srv.OnRegister(r.onRegister) })
	return r
}

func (r *fakeRegistrar) set(f func(r *fakeRegistrar)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

func (r *fakeRegistrar) onRegister(req *sip.Request, tx sip.ServerTransaction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := seen{callID: req.CallID().Value(), cseq: req.CSeq().SeqNo, expires: -1}
	if h := req.GetHeader("Expires"); h != nil {
		s.expires, _ = strconv.Atoi(h.Value())
	}
	defer func() { r.got <- s }()
	if r.away {
		return
	}
	if r.unavailable != "" {
		res := sip.NewResponseFromRequest(req, 503, "Service Unavailable", nil)
		res.AppendHeader(sip.NewHeader("Retry-After", r.unavailable))
		s.status = 503
		_ = tx.Respond(res)
		return
	}
	reply := func(code int, reason string, headers ...sip.Header) {
		res := sip.NewResponseFromRequest(req, code, reason, nil)
		for _, h := range headers {
			res.AppendHeader(h)
		}
		s.status = code
		_ = tx.Respond(res)
	}
	challenge := sip.NewHeader("WWW-Authenticate", fmt.Sprintf(`Digest realm="%s", nonce="%s", algorithm=MD5`, fakeRealm, r.nonce))
	auth := req.GetHeader("Authorization")
	if auth == nil {
		reply(401, "Unauthorized", challenge)
		return
	}
	if r.staleOnce && uatest.ValidDigest(auth.Value(), "REGISTER", r.user, r.password, fakeRealm, r.nonce) {
		r.staleOnce, r.nonce = false, r.nonce+"2"
		reply(401, "Unauthorized", sip.NewHeader("WWW-Authenticate",
			fmt.Sprintf(`Digest realm="%s", nonce="%s", algorithm=MD5, stale=true`, fakeRealm, r.nonce)))
		return
	}
	if !uatest.ValidDigest(auth.Value(), "REGISTER", r.user, r.password, fakeRealm, r.nonce) {
		if r.rechallenge {
			reply(401, "Unauthorized", challenge)
		} else {
			reply(403, "Forbidden")
		}
		return
	}
	s.authorized = true
	if r.minExpires > 0 && s.expires > 0 && s.expires < r.minExpires {
		reply(423, "Interval Too Brief", sip.NewHeader("Min-Expires", strconv.Itoa(r.minExpires)))
		return
	}
	granted := s.expires
	if r.grant > 0 && s.expires > 0 {
		granted = r.grant
	}
	contact := req.Contact().Clone()
	contact.Params = sip.NewParams()
	contact.Params.Add("expires", strconv.Itoa(granted))
	// A binding of someone else's first, as a registrar lists every binding of the AOR.
	other := &sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: "phone", Host: "192.0.2.7", Port: 5060}, Params: sip.NewParams()}
	other.Params.Add("expires", "3600")
	reply(200, "OK", other, contact)
}

// next is the next REGISTER the registrar receives.
func (r *fakeRegistrar) next(t *testing.T) seen {
	t.Helper()
	select {
	case s := <-r.got:
		return s
	case <-time.After(waitBound):
		t.Fatal("the registrar received no REGISTER")
		return seen{}
	}
}
