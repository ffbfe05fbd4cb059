package plivo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// Name is Plivo's name as call records and routes use it.
const Name = "plivo"

// Handset's routes for Plivo, under its public URL.
const (
	AnswerPath       = "/plivo/answer"        // a call's answer URL: the XML to run
	HangupPath       = "/plivo/hangup"        // a call's progress: ringing, and its end
	MachinePath      = "/plivo/machine"       // an outbound call's machine-detection verdict
	TransferPath     = "/plivo/transfer"      // the XML a transferred call fetches
	StreamPath       = "/plivo/stream"        // the media stream (WebSocket)
	StreamStatusPath = "/plivo/stream-status" // the stream's own events
)

// Query parameters Handset puts on the URLs it gives Plivo for an outbound call; V3
// signs the whole URL, so they come back authenticated.
const (
	CallParam     = "handset_call"    // Handset's call id
	MachineParam  = "handset_machine" // the machine policy
	ToParam       = "to"              // TransferPath: the number to connect
	CallerIDParam = "caller_id"       // TransferPath: the caller id to show
)

// Webhooks are the routes a Plivo application is pointed at: its answer URL and its
// hangup URL.
var Webhooks = carrier.Webhooks{VoicePath: AnswerPath, StatusPath: HangupPath, Same: carrier.SameWebhookURL}

// MachineDetectionOn is the machine_detection value Control sends by default: detect and
// report, leaving what to do to Handset. ("hangup" would make Plivo hang up on a machine
// itself; which values Plivo takes is unconfirmed, hence ControlOptions.MachineDetection.)
const MachineDetectionOn = "true"

// Ledger is what Control needs of the calls' shared memory (carrier.Memory has it): what
// Plivo's callbacks said about each call Handset placed, which Plivo's REST API cannot
// tell (busy, no answer, the machine verdict) or tells only under the call's second id.
// Callback.Record writes it.
type Ledger interface {
	// Progress is the latest word on the call known as ref, the request id Dial returned
	// or the CallUUID; p.Ref is the CallUUID once a callback brought it (Record makes the
	// request id an alias of it). ok is false when nothing is recorded.
	Progress(ctx context.Context, ref string) (p carrier.Progress, ok bool, err error)
}

// ControlOptions configure Control.
type ControlOptions struct {
	REST RESTOptions
	// PublicURL is where Plivo reaches Handset (HANDSET_PUBLIC_URL): a transferred call
	// fetches its new XML there.
	PublicURL string
	// AppID is the Plivo application Handset's numbers are linked to (PLIVO_APP_ID);
	// Attach needs it.
	AppID string
	// Ledger is what the callbacks recorded; nil: Control knows only what the REST API
	// says.
	Ledger Ledger
	// MachineDetection is the machine_detection value sent when a policy asks for
	// detection; empty is MachineDetectionOn.
	MachineDetection string
}

// Control is Plivo's control API as a carrier.Carrier.
type Control struct {
	rest      *REST
	publicURL string
	appID     string
	ledger    Ledger
	detect    string
}

var _ carrier.Carrier = (*Control)(nil)

// NewControl checks o and returns Plivo's control API. It makes no request.
func NewControl(o ControlOptions) (*Control, error) {
	rest, err := NewREST(o.REST)
	if err != nil {
		return nil, err
	}
	if o.AppID != "" && !validAppID(o.AppID) {
		return nil, fmt.Errorf("PLIVO_APP_ID %q is not an application id: it is the digits shown as App ID in the Plivo console (Voice > Applications)", voice.Clip(o.AppID, 40))
	}
	c := &Control{rest: rest, publicURL: strings.TrimRight(o.PublicURL, "/"), appID: o.AppID, ledger: o.Ledger, detect: o.MachineDetection}
	if c.detect == "" {
		c.detect = MachineDetectionOn
	}
	return c, nil
}

// REST is the client underneath, for what only Plivo has.
func (c *Control) REST() *REST { return c.rest }

// Name is "plivo".
func (c *Control) Name() string { return Name }

// OutboundURLs are the answer, hangup (progress) and machine-detection URLs of an
// outbound call: publicURL is HANDSET_PUBLIC_URL.
func OutboundURLs(publicURL string, id voice.CallID, policy carrier.MachinePolicy) (answerURL, hangupURL, machineURL string) {
	base := strings.TrimRight(publicURL, "/")
	q := url.Values{CallParam: {string(id)}}
	hangupURL = base + HangupPath + "?" + q.Encode()
	q.Set(MachineParam, string(policy))
	return base + AnswerPath + "?" + q.Encode(), hangupURL, base + MachinePath + "?" + q.Encode()
}

// TransferURL is the URL a transferred call fetches its <Dial> from.
func TransferURL(publicURL, to, callerID string) string {
	q := url.Values{ToParam: {to}}
	if callerID != "" {
		q.Set(CallerIDParam, callerID)
	}
	return strings.TrimRight(publicURL, "/") + TransferPath + "?" + q.Encode()
}

// Dial places the call with POST Call/. Its answer, progress (ring and hangup) and
// machine-detection URLs are Handset's Plivo routes under d.PublicURL; detection runs when the policy is hangup
// or message. The returned Ref is Plivo's request id: Call, Hangup and Transfer take it
// and find the call's CallUUID in the ledger once a callback has brought it.
func (c *Control) Dial(ctx context.Context, d carrier.Dial) (carrier.Call, error) {
	if !d.OnMachine.Valid() {
		return carrier.Call{}, carrier.Classify(carrier.ErrInvalid, fmt.Errorf("machine policy %q is not hangup, message or talk", d.OnMachine))
	}
	to, errTo := carrier.NormalizeNumber(d.To)
	from, errFrom := carrier.NormalizeNumber(d.From)
	if err := errors.Join(errTo, errFrom); err != nil {
		return carrier.Call{}, carrier.Classify(carrier.ErrInvalid, err)
	}
	answerURL, hangupURL, machineURL := OutboundURLs(d.PublicURL, d.CallID, d.OnMachine)
	req := CallRequest{To: to, From: from, AnswerURL: answerURL, HangupURL: hangupURL, RingURL: hangupURL,
		RingTimeout: d.RingTimeout, TimeLimit: d.MaxDuration}
	if d.OnMachine == carrier.MachineHangup || d.OnMachine == carrier.MachineMessage {
		req.MachineDetection, req.MachineDetectionURL = c.detect, machineURL
	}
	id, err := c.rest.CreateCall(ctx, req)
	if err != nil {
		return carrier.Call{}, classify(err)
	}
	return carrier.Call{Ref: id, To: to, From: from, Status: carrier.StatusQueued}, nil
}

// Call is call ref as Plivo holds it: what the callbacks recorded when the call has
// ended (Plivo's REST API cannot say busy or no-answer), else the live call, the queued
// request, or the ended call's record.
func (c *Control) Call(ctx context.Context, ref string) (carrier.Call, error) {
	if !validID(ref) {
		return carrier.Call{}, classify(checkID("fetch call", ref))
	}
	p, known, err := c.lookup(ctx, ref)
	if err != nil {
		return carrier.Call{}, err
	}
	out := carrier.Call{Ref: ref, AnsweredBy: p.AnsweredBy}
	if known && p.Ended() {
		return withProgress(out, p), nil
	}
	uuid := p.Ref
	if uuid == "" {
		q, err := c.rest.FetchQueued(ctx, ref)
		switch {
		case err == nil && q.CallUUID == "":
			out.To, out.From, out.Status = e164(q.To), e164(q.From), carrier.StatusQueued
			return out, nil
		case err == nil:
			uuid = q.CallUUID
		case notFound(err):
			// Not a request any more: dialled since the ledger was read (its first
			// callback, which names the CallUUID, came in between), or an inbound call.
			if p, known, err = c.lookup(ctx, ref); err != nil {
				return carrier.Call{}, err
			}
			if known && p.Ended() {
				return withProgress(out, p), nil
			}
			uuid = cmp.Or(p.Ref, ref)
		default:
			return carrier.Call{}, classify(err)
		}
	}
	live, err := c.rest.FetchLive(ctx, uuid)
	if err == nil {
		out.To, out.From, out.Status = e164(live.To), e164(live.From), statusOf(live.CallStatus)
		if out.Status == "" || out.Status.Ended() { // live means not over
			out.Status = carrier.StatusInProgress
		}
		return out, nil
	}
	if !notFound(err) {
		return carrier.Call{}, classify(err)
	}
	rec, err := c.rest.FetchRecord(ctx, uuid)
	if err != nil {
		if known && notFound(err) { // the record lags the end
			return withProgress(out, p), nil
		}
		return carrier.Call{}, classify(err)
	}
	out.To, out.From, out.Status = e164(rec.To), e164(rec.From), recordStatus(rec)
	out.Duration = time.Duration(rec.BillDuration) * time.Second
	// The call ended after the ledger was read, and its callbacks, which say what the
	// record cannot (a machine's verdict, a declined call), were recorded before that
	// end: read them again.
	if p, known, err := c.lookup(ctx, ref); err == nil && known {
		if p.AnsweredBy != "" {
			out.AnsweredBy = p.AnsweredBy
		}
		if p.Ended() {
			ended := withProgress(out, p)
			ended.Duration = cmp.Or(ended.Duration, out.Duration)
			return ended, nil
		}
	}
	return out, nil
}

// Hangup ends call ref: a request not dialled yet is cancelled, a call is hung up, and one
// that has ended already counts as hung up.
func (c *Control) Hangup(ctx context.Context, ref string) error {
	if !validID(ref) {
		return classify(checkID("hang up call", ref))
	}
	p, known, err := c.lookup(ctx, ref)
	if err != nil {
		return err
	}
	if known && p.Ended() {
		return nil
	}
	uuid := p.Ref
	if uuid == "" {
		err := c.rest.CancelRequest(ctx, ref)
		if err == nil || !notFound(err) {
			return classify(err)
		}
		// dialled already: its CallUUID may have arrived meanwhile
		if p, _, err = c.lookup(ctx, ref); err != nil {
			return err
		}
		if uuid = p.Ref; uuid == "" {
			uuid = ref
		}
	}
	if err := c.rest.HangupCall(ctx, uuid); err != nil && !notFound(err) {
		return classify(err)
	}
	return nil
}

// Transfer makes the live call fetch XML from Handset that dials to (POST Call/{uuid}/
// legs=aleg): Plivo ends the stream and connects the caller to the number.
func (c *Control) Transfer(ctx context.Context, ref, to, callerID string) error {
	n, err := carrier.NormalizeNumber(to)
	if err != nil {
		return carrier.Classify(carrier.ErrInvalid, fmt.Errorf("transfer to: %w", err))
	}
	if callerID != "" {
		if callerID, err = carrier.NormalizeNumber(callerID); err != nil {
			return carrier.Classify(carrier.ErrInvalid, fmt.Errorf("transfer caller id: %w", err))
		}
	}
	if c.publicURL == "" {
		return carrier.Classify(carrier.ErrInvalid, errors.New("transfer needs HANDSET_PUBLIC_URL: Plivo fetches the transfer's XML from Handset"))
	}
	if !validID(ref) {
		return classify(checkID("transfer call", ref))
	}
	p, known, err := c.lookup(ctx, ref)
	if err != nil {
		return err
	}
	if known && p.Ended() {
		return carrier.Classify(carrier.ErrRejected, fmt.Errorf("call %s has ended (%s): there is nothing to transfer", ref, p.Status))
	}
	uuid := p.Ref
	if uuid == "" {
		uuid = ref
	}
	err = c.rest.TransferCall(ctx, uuid, TransferURL(c.publicURL, n, callerID))
	if notFound(err) { // no live call by that id
		return carrier.Classify(carrier.ErrRejected, err)
	}
	if err != nil {
		return classify(err)
	}
	// The call now runs the transfer's document, but a stream started by REST (after a
	// machine verdict) runs beside documents: stopped here, Handset's side of the call ends
	// as transferred, as it does when a carrier closes the stream itself.
	if err := c.rest.StopStreams(ctx, uuid); err != nil && !notFound(err) {
		return classify(fmt.Errorf("the call was transferred but its media stream to Handset did not stop: %w", err))
	}
	return nil
}

// Account fetches the account.
func (c *Control) Account(ctx context.Context) (carrier.Account, error) {
	a, err := c.rest.Account(ctx)
	if err != nil {
		return carrier.Account{}, classify(err)
	}
	return carrier.Account{ID: a.AuthID, Name: a.Name, Status: a.State, Trial: strings.EqualFold(a.AccountType, "trial")}, nil
}

// Numbers lists the account's phone numbers, each with its application's URLs.
func (c *Control) Numbers(ctx context.Context) ([]carrier.Number, error) {
	ns, err := c.rest.Numbers(ctx)
	if err != nil {
		return nil, classify(err)
	}
	apps := map[string]Application{}
	out := make([]carrier.Number, 0, len(ns))
	for _, n := range ns {
		cn, err := c.numberOf(ctx, n, apps)
		if err != nil {
			return nil, err
		}
		out = append(out, cn)
	}
	return out, nil
}

// Number finds one of the account's numbers.
func (c *Control) Number(ctx context.Context, e164 string) (carrier.Number, error) {
	n, err := c.rest.FindNumber(ctx, e164)
	if err != nil {
		return carrier.Number{}, classify(err)
	}
	return c.numberOf(ctx, n, map[string]Application{})
}

// Attach links the number to Handset's application (PLIVO_APP_ID) and points the
// application's answer URL at voiceURL and, when set, its hangup URL at statusURL. Every
// number linked to that application follows: the URLs are the application's.
func (c *Control) Attach(ctx context.Context, n carrier.Number, voiceURL, statusURL string) (carrier.Number, error) {
	if c.appID == "" {
		return carrier.Number{}, carrier.Classify(carrier.ErrInvalid, errors.New("PLIVO_APP_ID is not set: create an application in the Plivo console (Voice > Applications) and set its App ID"))
	}
	if err := c.rest.SetApplicationURLs(ctx, c.appID, voiceURL, statusURL); err != nil {
		return carrier.Number{}, classify(err)
	}
	if err := c.rest.LinkNumber(ctx, n.PhoneNumber, c.appID); err != nil {
		return carrier.Number{}, classify(err)
	}
	return c.Number(ctx, n.PhoneNumber)
}

// numberOf is n as the contract words it, its URLs its application's (looked up once per
// application through apps).
func (c *Control) numberOf(ctx context.Context, n Number, apps map[string]Application) (carrier.Number, error) {
	phone := e164(n.Number)
	if phone == "" {
		return carrier.Number{}, carrier.Classify(carrier.ErrUnreachable, &voice.ProviderError{Provider: restProvider, Op: "list numbers",
			Kind: voice.KindProtocol, Err: fmt.Errorf("number %q is not a phone number", voice.Clip(n.Number, 40))})
	}
	out := carrier.Number{Ref: phone, PhoneNumber: phone, FriendlyName: n.Alias}
	id := n.AppID()
	if id == "" || !validAppID(id) {
		return out, nil
	}
	app, ok := apps[id]
	if !ok {
		var err error
		if app, err = c.rest.Application(ctx, id); err != nil {
			return carrier.Number{}, classify(err)
		}
		apps[id] = app
	}
	out.VoiceURL, out.VoiceMethod, out.StatusCallback = app.AnswerURL, app.AnswerMethod, app.HangupURL
	return out, nil
}

// lookup asks the ledger, when there is one; the Progress's Ref is the call's CallUUID
// when the ledger knows it under another name, else empty.
func (c *Control) lookup(ctx context.Context, ref string) (carrier.Progress, bool, error) {
	if c.ledger == nil {
		return carrier.Progress{}, false, nil
	}
	p, ok, err := c.ledger.Progress(ctx, ref)
	if err != nil {
		return carrier.Progress{}, false, fmt.Errorf("the calls' memory: %w", err)
	}
	if p.Ref == ref {
		p.Ref = "" // known by this name only: whether it is a request or a call is not said
	}
	return p, ok, nil
}

func withProgress(c carrier.Call, p carrier.Progress) carrier.Call {
	c.Status, c.Duration = p.Status, p.Duration
	if p.AnsweredBy != "" {
		c.AnsweredBy = p.AnsweredBy
	}
	if p.Declined && c.Status == "" {
		c.Status = carrier.StatusCompleted
	}
	return c
}

// StatusOf maps a CallStatus Plivo reports onto the contract's: timeout is no-answer,
// cancel is canceled, the rest are the same words; "" when unknown.
func StatusOf(s string) carrier.Status { return statusOf(s) }

func statusOf(s string) carrier.Status {
	switch s {
	case "queued":
		return carrier.StatusQueued
	case "ringing", "early-media":
		return carrier.StatusRinging
	case "in-progress", "answered":
		return carrier.StatusInProgress
	case "completed":
		return carrier.StatusCompleted
	case "busy":
		return carrier.StatusBusy
	case "no-answer", "timeout":
		return carrier.StatusNoAnswer
	case "failed":
		return carrier.StatusFailed
	case "cancel", "canceled", "cancelled":
		return carrier.StatusCanceled
	}
	return ""
}

// recordStatus is an ended call's status from its record, which has no status field:
// answered means completed, else the hang-up cause's name decides. (The cause names are
// unconfirmed; failed is the fallback.)
func recordStatus(r CallRecord) carrier.Status {
	cause := strings.ToLower(r.HangupCauseName)
	switch {
	case r.AnswerTime != "" || r.BillDuration > 0:
		return carrier.StatusCompleted
	case strings.Contains(cause, "busy"):
		return carrier.StatusBusy
	case strings.Contains(cause, "no answer"), strings.Contains(cause, "timeout"):
		return carrier.StatusNoAnswer
	case strings.Contains(cause, "cancel"):
		return carrier.StatusCanceled
	}
	return carrier.StatusFailed
}
