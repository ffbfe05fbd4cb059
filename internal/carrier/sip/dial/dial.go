package dial

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// Options describe one outbound call.
type Options struct {
	// Dialogs keeps the call's dialog for the requests the callee sends inside it; required.
	Dialogs *Dialogs
	// Target is who is called, through the trunk: sip:+15551234567@trunk.example.com.
	// Its transport parameter picks the transport.
	Target sip.Uri
	// From is the caller id's user part (+15557654321); the From host is the Target's.
	From string
	// Contact is where the callee reaches Handset inside the dialog.
	Contact sip.ContactHeader
	// Offer is the SDP offer sent with the INVITE.
	Offer []byte
	// Username and Password answer the trunk's digest challenge (401 or 407).
	Username, Password string
	// RingTimeout bounds the wait for an answer, after which the call is cancelled and
	// fails with ErrNoAnswer; 60 s when zero.
	RingTimeout time.Duration
	// OnProvisional, when set, is called with each progress status (180, 183; not 100).
	OnProvisional func(status int)
	// OnRequest, when set, answers the in-dialog requests this package does not (INFO,
	// re-INVITE, UPDATE): it returns the status and body to reply with. When nil, a
	// re-INVITE or an UPDATE is answered 200 (with the offer the call was placed with when
	// it carries an offer: a session refresh keeps the session as it was), OPTIONS 200,
	// anything else 501.
	OnRequest func(req *sip.Request) (status int, body []byte)
	// Headers are added to the INVITE (a session timer's Session-Expires, Supported).
	Headers []sip.Header
	// OnTooBrief, when set, is asked once, after a 422 (Session Interval Too Small, RFC
	// 4028) that names the far end's Min-SE, for the headers of an INVITE sent again in
	// the same call (its Call-ID and From tag, the next CSeq); ok false gives up.
	OnTooBrief func(minSE time.Duration) (headers []sip.Header, ok bool)
	// OnRefresh, when set, sees each re-INVITE or UPDATE before its 2xx leaves: it
	// returns headers to add to the 2xx (a session timer's terms), or a failure status
	// and the headers of that answer instead (422 with Min-SE).
	OnRefresh func(req *sip.Request) (status int, headers []sip.Header)
}

// defaultRingTimeout is how long a call may ring when Options.RingTimeout is zero.
const defaultRingTimeout = 60 * time.Second

// hangupBound bounds the clean-up a failed Invite does on its own (the BYE of an answer
// that crossed the CANCEL).
const hangupBound = 5 * time.Second

// Why a call did not connect or a transfer failed; errors wrap one of them.
var (
	ErrBusy          = errors.New("busy")                              // 486, 600
	ErrNoAnswer      = errors.New("no answer")                         // 480, 408, or RingTimeout passed
	ErrInvalidNumber = errors.New("invalid number")                    // 404, 484, 604
	ErrRefused       = errors.New("refused")                           // 403, 603, and other 4xx
	ErrCredentials   = errors.New("the trunk refused the credentials") // 401/407 after the digest answer, 403 after a challenge
	ErrUnreachable   = errors.New("the trunk could not be reached")    // no answer, transport error, 5xx
	ErrCancelled     = errors.New("cancelled before the answer")       // ctx ended while ringing: CANCEL sent, 487
	ErrEnded         = errors.New("the dialog has ended")
	// ErrReferRefused is the cause (CallError.Err) when the REFER itself got a final
	// failure, rather than the transferred call reported in a NOTIFY.
	ErrReferRefused = errors.New("the REFER was refused")
)

// CallError is a failed INVITE or REFER: the final status and the kind of failure.
type CallError struct {
	Status int    // the final SIP status; 0 when none came
	Phrase string // its reason phrase
	Kind   error  // one of the Err values
	Err    error  // the underlying cause when there was no status
	// MinSE is a 422's Min-SE: the shortest session interval the far end takes (RFC
	// 4028), for an INVITE sent again with a longer one; 0 otherwise.
	MinSE time.Duration
}

func (e *CallError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%v: %v", e.Kind, e.Err)
	}
	return fmt.Sprintf("%v (%d %s)", e.Kind, e.Status, e.Phrase)
}

// Unwrap gives errors.Is both the kind and the cause.
func (e *CallError) Unwrap() []error { return []error{e.Kind, e.Err} }

// kindOf is what a final failure status means for the caller.
func kindOf(status int) error {
	switch {
	case status == 486 || status == 600:
		return ErrBusy
	case status == 480 || status == 408:
		return ErrNoAnswer
	case status == 404 || status == 484 || status == 604:
		return ErrInvalidNumber
	case status == 401 || status == 407:
		return ErrCredentials
	case status == 487:
		return ErrCancelled
	case status >= 500 && status < 600:
		return ErrUnreachable
	default:
		return ErrRefused
	}
}

func statusError(res *sip.Response) *CallError {
	ce := &CallError{Status: res.StatusCode, Phrase: sanitize(res.Reason), Kind: kindOf(res.StatusCode)}
	if h := res.GetHeader("Min-SE"); h != nil && res.StatusCode == 422 {
		num, _, _ := strings.Cut(h.Value(), ";")
		if secs, err := strconv.ParseUint(strings.TrimSpace(num), 10, 32); err == nil && secs <= maxMinSE {
			ce.MinSE = time.Duration(secs) * time.Second
		}
	}
	return ce
}

// maxMinSE bounds a 422's Min-SE (seconds): a day.
const maxMinSE = 24 * 60 * 60

// Invite calls o.Target through client and waits for the answer; it returns the
// established dialog (ACK sent) or a *CallError. Ending ctx before the answer sends CANCEL
// and waits for the trunk's 487 (at most 32 s); CANCEL cannot go before the first
// provisional response, so until one comes Invite waits for it or for the INVITE to time
// out (32 s over UDP). OnProvisional runs on Invite's goroutine.
func Invite(ctx context.Context, client *sipgo.Client, o Options) (*Dialog, error) {
	if o.Dialogs == nil {
		return nil, errors.New("dial: Options.Dialogs is required: it routes the callee's requests to the call")
	}
	if o.RingTimeout <= 0 {
		o.RingTimeout = defaultRingTimeout
	}
	ua := &sipgo.DialogUA{Client: client, ContactHDR: o.Contact}
	ringing, stopRinging := context.WithTimeoutCause(ctx, o.RingTimeout, ErrNoAnswer)
	defer stopRinging()
	var s *sipgo.DialogClientSession
	var prev *sip.Request
	for {
		var err error
		s, err = ua.WriteInvite(ctx, inviteRequest(o, prev))
		if err != nil {
			return nil, &CallError{Kind: ErrUnreachable, Err: err}
		}
		challenged := false
		err = s.WaitAnswer(ringing, sipgo.AnswerOptions{
			Username: o.Username, Password: o.Password,
			OnResponse: func(res *sip.Response) error {
				switch code := res.StatusCode; {
				case code == 401 || code == 407:
					challenged = true
				case res.IsProvisional() && code != 100 && o.OnProvisional != nil:
					o.OnProvisional(code)
				}
				return nil
			},
		})
		if err == nil {
			break
		}
		ferr := failed(ctx, ringing, s, err, challenged)
		ce := (*CallError)(nil)
		if prev != nil || o.OnTooBrief == nil || !errors.As(ferr, &ce) || ce.Status != 422 || ce.MinSE == 0 {
			return nil, ferr
		}
		headers, ok := o.OnTooBrief(ce.MinSE)
		if !ok {
			return nil, ferr
		}
		o.Headers, prev = headers, s.InviteRequest
	}
	d := newDialog(s, o)
	// Kept before the ACK goes: the callee may hang up the moment it arrives.
	o.Dialogs.add(d)
	if err := s.Ack(ctx); err != nil {
		d.end(false)
		return nil, &CallError{Kind: ErrUnreachable, Err: fmt.Errorf("sending the ACK: %w", err)}
	}
	return d, nil
}

// failed explains why WaitAnswer did not establish the call; challenged says a digest
// challenge came first, after which 403 refuses the credentials. An answer that crossed
// the CANCEL is acknowledged and hung up, or the callee would hold a call nobody is on.
func failed(ctx, ringing context.Context, s *sipgo.DialogClientSession, err error, challenged bool) error {
	if res := s.InviteResponse; res != nil && res.IsSuccess() {
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hangupBound)
		defer cancel()
		if id, idErr := sip.DialogIDFromResponse(res); idErr == nil {
			s.ID = id
			if s.Ack(bctx) == nil {
				_ = s.Bye(bctx)
			}
		}
	}
	var refused *sipgo.ErrDialogResponse
	switch {
	case ctx.Err() != nil:
		ce := &CallError{Kind: ErrCancelled, Err: context.Cause(ctx)}
		if res := s.InviteResponse; res != nil && res.StatusCode == 487 {
			ce.Status, ce.Phrase = 487, sanitize(res.Reason)
		}
		return ce
	case ringing.Err() != nil:
		return &CallError{Kind: ErrNoAnswer, Err: fmt.Errorf("no answer within the ring timeout")}
	case errors.As(err, &refused):
		ce := statusError(refused.Res)
		if challenged && ce.Status == 403 {
			ce.Kind = ErrCredentials
		}
		return ce
	default:
		return &CallError{Kind: ErrUnreachable, Err: err}
	}
}

// inviteRequest is the INVITE for o: the caller id in From, the callee in To. After prev
// was refused, it is the same call's next INVITE: prev's Call-ID and From, the next CSeq.
func inviteRequest(o Options, prev *sip.Request) *sip.Request {
	req := sip.NewRequest(sip.INVITE, *o.Target.Clone())
	scheme := o.Target.Scheme
	if scheme == "" {
		scheme = "sip"
	}
	from := &sip.FromHeader{Address: sip.Uri{Scheme: scheme, User: o.From, Host: o.Target.Host}, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	to := &sip.ToHeader{Address: sip.Uri{Scheme: scheme, User: o.Target.User, Host: o.Target.Host}, Params: sip.NewParams()}
	if prev != nil {
		from = sip.HeaderClone(prev.From()).(*sip.FromHeader)
		req.AppendHeader(sip.HeaderClone(prev.CallID()))
		req.AppendHeader(&sip.CSeqHeader{SeqNo: prev.CSeq().SeqNo + 1, MethodName: sip.INVITE})
	}
	req.AppendHeader(from)
	req.AppendHeader(to)
	req.AppendHeader(o.Contact.Clone())
	for _, h := range o.Headers {
		req.AppendHeader(h)
	}
	if o.Offer != nil {
		req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	}
	req.SetBody(o.Offer)
	return req
}

// sanitize bounds a peer's reason phrase before it reaches logs and errors: valid UTF-8,
// no control characters, at most maxPhrase bytes and an ellipsis.
func sanitize(s string) string {
	s = strings.Map(func(c rune) rune {
		if c < ' ' || c == 0x7f || c == utf8.RuneError {
			return -1
		}
		return c
	}, strings.ToValidUTF8(s, ""))
	if len(s) <= maxPhrase {
		return s
	}
	cut := maxPhrase
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// maxPhrase bounds a reason phrase kept from a peer.
const maxPhrase = 64
