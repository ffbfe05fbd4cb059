package register

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// maxRounds bounds the REGISTERs of one attempt: the first, its digest answer, a stale
// nonce's second answer, and the same again after a 423.
const maxRounds = 6

// attempt sends one REGISTER asking for expires (0 removes the binding), answering a
// digest challenge and a 423 as they come. It returns the final response, the expiry
// granted and an error wrapping one of the Err kinds.
func (r *Registration) attempt(ctx context.Context, expires time.Duration) (*sip.Response, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	req := r.request(expires)
	res, err := r.send(ctx, req)
	answered := false // a digest answer was sent for the current challenge
	for round := 1; ; round++ {
		if errors.Is(err, ErrRefused) {
			return res, 0, err
		}
		if err != nil {
			return res, 0, fmt.Errorf("%w: %s: %w", ErrUnreachable, r.opts.Registrar.String(), err)
		}
		if round > maxRounds {
			return res, 0, r.failure(ErrRefused, res, "too many rounds")
		}
		switch code := res.StatusCode; {
		case code >= 200 && code < 300:
			return res, r.granted(res, expires), nil
		case code == sip.StatusUnauthorized || code == sip.StatusProxyAuthRequired:
			if r.opts.Password == "" {
				return res, 0, r.failure(ErrCredentials, res, "challenged, and no password is configured")
			}
			if answered && !stale(res) {
				return res, 0, r.failure(ErrCredentials, res, "challenged again after the digest answer")
			}
			answered = true
			res, err = r.answer(ctx, req, res)
		case code == statusIntervalTooBrief && expires > 0:
			longer, ok := minExpires(res)
			if !ok || longer <= expires || longer > maxExpires {
				return res, 0, r.failure(ErrRefused, res, "an unusable Min-Expires")
			}
			expires, r.expires = longer, longer
			r.log.Info("the registrar asks for a longer expiry", "expires", longer)
			req = r.request(expires)
			answered = false
			res, err = r.send(ctx, req)
		case code == sip.StatusForbidden:
			return res, 0, r.failure(ErrCredentials, res, "")
		case code == sip.StatusRequestTimeout || code >= 500 && code < 600:
			return res, 0, r.failure(ErrUnreachable, res, "")
		default:
			return res, 0, r.failure(ErrRefused, res, "")
		}
	}
}

func (r *Registration) failure(kind error, res *sip.Response, why string) error {
	if why != "" {
		why = ": " + why
	}
	// The reason phrase is the registrar's to write: quoted and cut short.
	return fmt.Errorf("%w: %s answered %d %.64q%s", kind, r.opts.Registrar.String(), res.StatusCode, res.Reason, why)
}

// request is the next REGISTER of the binding, asking for expires.
func (r *Registration) request(expires time.Duration) *sip.Request {
	r.cseq++
	req := sip.NewRequest(sip.REGISTER, *r.opts.Registrar.Clone())
	req.Recipient.User = "" // a Request-URI of REGISTER names the domain only
	from := &sip.FromHeader{Address: *r.opts.AOR.Clone(), Params: sip.NewParams()}
	from.Params.Add("tag", r.fromTag)
	to := &sip.ToHeader{Address: *r.opts.AOR.Clone(), Params: sip.NewParams()}
	callID := r.callID
	contact := r.opts.Contact.Clone()
	if contact.Params != nil {
		contact.Params.Remove("expires") // the Expires header says it, once
	}
	exp := sip.ExpiresHeader(uint32(expires / time.Second))
	req.AppendHeader(from)
	req.AppendHeader(to)
	req.AppendHeader(&callID)
	req.AppendHeader(&sip.CSeqHeader{SeqNo: r.cseq, MethodName: sip.REGISTER})
	req.AppendHeader(contact)
	req.AppendHeader(&exp)
	return req
}

// statusIntervalTooBrief is 423: the registrar wants a longer expiry (its Min-Expires).
const statusIntervalTooBrief = 423

// send sends req and waits for its final response.
func (r *Registration) send(ctx context.Context, req *sip.Request) (*sip.Response, error) {
	tx, err := r.client.TransactionRequest(ctx, req, sipgo.ClientRequestBuild)
	return r.final(ctx, tx, err)
}

// answer sends req again with the digest answer to the challenge in res.
func (r *Registration) answer(ctx context.Context, req *sip.Request, res *sip.Response) (*sip.Response, error) {
	tx, err := r.client.TransactionDigestAuth(ctx, req, res,
		sipgo.DigestAuth{Username: r.opts.Username, Password: r.opts.Password})
	r.cseq = req.CSeq().SeqNo // the answer went with the next CSeq
	if err != nil && tx == nil {
		return res, fmt.Errorf("%w: could not answer its challenge: %w", ErrRefused, err)
	}
	return r.final(ctx, tx, err)
}

// final waits for the final response of tx, which started with err.
func (r *Registration) final(ctx context.Context, tx sip.ClientTransaction, err error) (*sip.Response, error) {
	if err != nil {
		return nil, err
	}
	defer tx.Terminate()
	for {
		select {
		case res := <-tx.Responses():
			if res.IsProvisional() {
				continue
			}
			return res, nil
		case <-tx.Done():
			if err := tx.Err(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("the transaction ended without a final response")
		case <-ctx.Done():
			return nil, fmt.Errorf("no final response: %w", ctx.Err())
		}
	}
}

// granted is the expiry the registrar granted Handset's binding: the expires parameter of
// the Contact it lists for it, else the Expires header, else what was asked. It never
// exceeds what was asked: a registrar may shorten a binding, not lengthen it.
func (r *Registration) granted(res *sip.Response, asked time.Duration) time.Duration {
	seconds := -1
	for _, h := range res.GetHeaders("Contact") {
		c, ok := h.(*sip.ContactHeader)
		if !ok || !sameBinding(c.Address, r.opts.Contact.Address) {
			continue
		}
		if v, ok := c.Params.Get("expires"); ok {
			seconds = parseSeconds(v)
		}
		break
	}
	if seconds < 0 {
		if h := res.GetHeader("Expires"); h != nil {
			seconds = parseSeconds(h.Value())
		}
	}
	if seconds <= 0 {
		return asked
	}
	return min(time.Duration(seconds)*time.Second, asked)
}

// sameBinding reports whether the registrar's contact a is Handset's b: registrars echo
// the URI, sometimes with parameters of their own.
func sameBinding(a, b sip.Uri) bool {
	port := func(u sip.Uri) int {
		if u.Port == 0 {
			return 5060
		}
		return u.Port
	}
	return a.User == b.User && strings.EqualFold(a.Host, b.Host) && port(a) == port(b)
}

// minExpires is a 423's Min-Expires.
func minExpires(res *sip.Response) (time.Duration, bool) {
	h := res.GetHeader("Min-Expires")
	if h == nil {
		return 0, false
	}
	s := parseSeconds(h.Value())
	return time.Duration(s) * time.Second, s > 0
}

// parseSeconds reads a delta-seconds value; -1 when it is not one or is absurdly large.
func parseSeconds(v string) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > int(maxExpires/time.Second)*10 {
		return -1
	}
	return n
}

// retryAfter is the wait a failure response asks for (Retry-After), at most limit; zero
// when it asks for none.
func retryAfter(res *sip.Response, limit time.Duration) time.Duration {
	if res == nil {
		return 0
	}
	h := res.GetHeader("Retry-After")
	if h == nil {
		return 0
	}
	// "120;duration=3600 (maintenance)": the seconds come first.
	value, _, _ := strings.Cut(h.Value(), ";")
	value, _, _ = strings.Cut(value, "(")
	s := parseSeconds(value)
	if s <= 0 {
		return 0
	}
	return min(time.Duration(s)*time.Second, limit)
}

// stale reports whether a challenge says only the nonce expired, not the answer.
func stale(res *sip.Response) bool {
	for _, name := range []string{"WWW-Authenticate", "Proxy-Authenticate"} {
		if h := res.GetHeader(name); h != nil && strings.Contains(strings.ToLower(h.Value()), "stale=true") {
			return true
		}
	}
	return false
}
