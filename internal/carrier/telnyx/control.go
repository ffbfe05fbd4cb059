package telnyx

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// Name is Telnyx's name as call records and routes use it.
const Name = "telnyx"

// WebhookPath is the one route every Telnyx event reaches, inbound and outbound.
const WebhookPath = "/telnyx/webhook"

// Control is Telnyx's control API as a carrier.Carrier: the REST client, and the call
// ledger the webhooks write, since Telnyx's REST cannot say how a call ended.
type Control struct {
	rest   *REST
	memory carrier.Memory
}

var _ carrier.Carrier = (*Control)(nil)

// NewControl checks o and returns Telnyx's control API reading call progress from memory
// (nil: only whether a call is alive is known). It makes no request.
func NewControl(o RESTOptions, memory carrier.Memory) (*Control, error) {
	rest, err := NewREST(o)
	if err != nil {
		return nil, err
	}
	return &Control{rest: rest, memory: memory}, nil
}

// REST is the client underneath, for what only Telnyx has.
func (c *Control) REST() *REST { return c.rest }

// Name is "telnyx".
func (c *Control) Name() string { return Name }

// Dial places the call with POST /calls from TELNYX_CONNECTION_ID. Handset's data rides
// in client_state (Telnyx signs the body, not the URL); the events go to WebhookPath
// under d.PublicURL; the machine policy picks the detection mode (AMDMode).
func (c *Control) Dial(ctx context.Context, d carrier.Dial) (carrier.Call, error) {
	req, err := c.dialRequest(d)
	if err != nil {
		return carrier.Call{}, carrier.Classify(carrier.ErrInvalid, err)
	}
	info, err := c.rest.Dial(ctx, req)
	if err != nil {
		return carrier.Call{}, err
	}
	if info.CallControlID == "" {
		return carrier.Call{}, carrier.Classify(carrier.ErrUnreachable, errors.New("telnyx: dial: the answer holds no call_control_id"))
	}
	return carrier.Call{Ref: info.CallControlID, To: req.To, From: req.From, Status: carrier.StatusQueued}, nil
}

// dialRequest is d as the body of POST /calls, or why it cannot be sent.
func (c *Control) dialRequest(d carrier.Dial) (CallRequest, error) {
	if !d.OnMachine.Valid() {
		return CallRequest{}, fmt.Errorf("machine policy %q is not hangup, message or talk", d.OnMachine)
	}
	to, err := carrier.NormalizeNumber(d.To)
	if err != nil {
		return CallRequest{}, fmt.Errorf("dial to: %w", err)
	}
	from, err := carrier.NormalizeNumber(d.From)
	if err != nil {
		return CallRequest{}, fmt.Errorf("dial from: %w", err)
	}
	if d.RingTimeout < 0 || d.MaxDuration < 0 {
		return CallRequest{}, fmt.Errorf("ring timeout %v or maximum duration %v is negative", d.RingTimeout, d.MaxDuration)
	}
	if c.rest.connection == "" {
		return CallRequest{}, errors.New("TELNYX_CONNECTION_ID is not set: set it to the id of the Call Control Application calls are placed from")
	}
	hook, err := webhookURL(d.PublicURL)
	if err != nil {
		return CallRequest{}, err
	}
	req := CallRequest{
		ConnectionID: c.rest.connection, To: to, From: from,
		TimeoutSecs: wholeSeconds(d.RingTimeout), TimeLimitSecs: wholeSeconds(d.MaxDuration),
		WebhookURL: hook, AnsweringMachineDetection: AMDMode(d.OnMachine),
	}
	if d.CallID == "" { // nothing of Handset's to carry: a call no record follows
		return req, nil
	}
	if req.ClientState, err = EncodeClientState(ClientState{CallID: d.CallID, Machine: d.OnMachine}); err != nil {
		return CallRequest{}, err
	}
	req.CommandID = "dial:" + string(d.CallID)
	return req, nil
}

// webhookURL is WebhookPath under publicURL, which must be an http(s) URL.
func webhookURL(publicURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(publicURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("public URL %q is not an http(s) URL: set HANDSET_PUBLIC_URL", voice.Clip(publicURL, 100))
	}
	return strings.TrimRight(u.String(), "/") + WebhookPath, nil
}

// wholeSeconds rounds d up to whole seconds; 0 stays 0.
func wholeSeconds(d time.Duration) int {
	return int(min(math.Ceil(d.Seconds()), math.MaxInt32))
}

// AMDMode is the answering_machine_detection mode for policy: no detection to talk to
// anyone, plain detection to hang up on machines, and detection that waits for the beep
// to leave a message after it.
func AMDMode(policy carrier.MachinePolicy) string {
	switch policy {
	case carrier.MachineHangup:
		return AMDDetect
	case carrier.MachineMessage:
		return AMDBeep
	}
	return AMDDisabled
}

// Call is call ref as Handset knows it: the status and verdict its webhooks recorded in
// the ledger, and Telnyx's GET /calls/{id} for whether it is still alive.
func (c *Control) Call(ctx context.Context, ref string) (carrier.Call, error) {
	p, known, err := c.ledger(ctx, ref)
	if err != nil {
		return carrier.Call{}, err
	}
	if known && p.Ended() {
		return ledgerCall(ref, p), nil
	}
	info, err := c.rest.FetchCall(ctx, ref)
	switch {
	case errors.Is(err, carrier.ErrNotFound) && known:
		info.IsAlive = false // over, and its hangup event not recorded yet
	case err != nil:
		return carrier.Call{}, err
	}
	call := ledgerCall(ref, p)
	if info.IsAlive {
		return call, nil
	}
	// Not alive, and the ledger had no ending: the call may have ended since the ledger
	// was read, with its events (a machine's verdict, a declined call) recorded before
	// that end, so read it again.
	if p, known, err := c.ledger(ctx, ref); err == nil && known {
		if p.Ended() {
			return ledgerCall(ref, p), nil
		}
		call.Status, call.AnsweredBy, call.Duration = cmp.Or(p.Status, call.Status), cmp.Or(p.AnsweredBy, call.AnsweredBy), cmp.Or(p.Duration, call.Duration)
	}
	// Still no ending: the hangup event is on its way (Telnyx retries webhooks). Say what
	// the REST knows.
	if call.Status == carrier.StatusInProgress {
		call.Status, call.Duration = carrier.StatusCompleted, info.Duration()
	} else if c.memory == nil {
		call.Status = carrier.StatusCompleted
	}
	return call, nil
}

// ledger reads what the webhooks recorded of call ref; known is false without a ledger.
func (c *Control) ledger(ctx context.Context, ref string) (p carrier.Progress, known bool, err error) {
	if c.memory == nil {
		return carrier.Progress{}, false, nil
	}
	if p, known, err = c.memory.Progress(ctx, ref); err != nil {
		return p, false, carrier.Classify(carrier.ErrUnreachable, fmt.Errorf("telnyx: read the call ledger: %w", err))
	}
	return p, known, nil
}

// ledgerCall is call ref as the ledger's p says it: a call not seen to start is queued,
// and one Handset declined (hung up on a machine) completed.
func ledgerCall(ref string, p carrier.Progress) carrier.Call {
	call := carrier.Call{Ref: ref, Status: p.Status, AnsweredBy: p.AnsweredBy, Duration: p.Duration}
	switch {
	case call.Status == "" && p.Ended(): // declined
		call.Status = carrier.StatusCompleted
	case call.Status == "":
		call.Status = carrier.StatusQueued
	}
	return call
}

// Hangup sends actions/hangup. A call that has already ended (422 with code 90018, or
// unknown to Telnyx) counts as hung up.
func (c *Control) Hangup(ctx context.Context, ref string) error {
	err := c.rest.Command(ctx, ref, "hangup", HangupRequest{CommandID: "hangup:" + ref})
	if errors.Is(err, ErrCallEnded) || errors.Is(err, carrier.ErrNotFound) {
		return nil
	}
	return err
}

// Transfer sends actions/transfer: Telnyx dials to and bridges the caller to it; then
// actions/streaming_stop, which ends Handset's side of the call.
func (c *Control) Transfer(ctx context.Context, ref, to, callerID string) error {
	n, err := carrier.NormalizeNumber(to)
	if err != nil {
		return carrier.Classify(carrier.ErrInvalid, fmt.Errorf("transfer to: %w", err))
	}
	from := ""
	if callerID != "" {
		if from, err = carrier.NormalizeNumber(callerID); err != nil {
			return carrier.Classify(carrier.ErrInvalid, fmt.Errorf("transfer caller id: %w", err))
		}
	}
	if err := c.rest.Command(ctx, ref, "transfer", TransferRequest{To: n, From: from, CommandID: "transfer:" + ref + ":" + n}); err != nil {
		return err
	}
	// Handset's side of a transferred call ends when its media stream does (as on Twilio,
	// which ends the stream itself). Whether Telnyx stops the stream on a transfer is
	// UNCONFIRMED, so Handset asks; a call gone already has no stream left.
	err = c.rest.Command(ctx, ref, "streaming_stop", StreamingStopRequest{CommandID: "streaming_stop:" + ref + ":" + n})
	if err == nil || errors.Is(err, ErrCallEnded) || errors.Is(err, carrier.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("the call was transferred to %s, but its media stream to Handset did not stop: %w", n, err)
}

// Account checks the key with GET /balance and names the account by its Call Control
// Application (Telnyx has no account id to show): ID is TELNYX_CONNECTION_ID.
func (c *Control) Account(ctx context.Context) (carrier.Account, error) {
	if _, err := c.rest.Balance(ctx); err != nil {
		return carrier.Account{}, err
	}
	if c.rest.connection == "" {
		return carrier.Account{}, carrier.Classify(carrier.ErrInvalid, errors.New("TELNYX_CONNECTION_ID is not set: set it to the id of the Call Control Application Handset answers for"))
	}
	app, err := c.rest.Application(ctx, c.rest.connection)
	if err != nil {
		return carrier.Account{}, err
	}
	status := "active"
	if !app.Active {
		status = "inactive"
	}
	return carrier.Account{ID: app.ID, Name: app.ApplicationName, Status: status}, nil
}

// Numbers lists the account's numbers with where their calls go.
func (c *Control) Numbers(ctx context.Context) ([]carrier.Number, error) {
	ns, err := c.rest.Numbers(ctx)
	if err != nil {
		return nil, err
	}
	hook, err := c.ourWebhook(ctx, ns...)
	if err != nil {
		return nil, err
	}
	out := make([]carrier.Number, len(ns))
	for i, n := range ns {
		out[i] = c.numberOf(n, hook)
	}
	return out, nil
}

// Number finds one of the account's numbers.
func (c *Control) Number(ctx context.Context, e164 string) (carrier.Number, error) {
	n, err := c.rest.FindNumber(ctx, e164)
	if err != nil {
		return carrier.Number{}, err
	}
	hook, err := c.ourWebhook(ctx, n)
	if err != nil {
		return carrier.Number{}, err
	}
	return c.numberOf(n, hook), nil
}

// Attach assigns the number to TELNYX_CONNECTION_ID and points that application's events
// at voiceURL (webhook API version 2). statusURL is not used: Telnyx sends every event of
// a call to the one URL. On Telnyx the URL belongs to the application, so every number
// on it now reaches voiceURL: AttachNotice says which.
func (c *Control) Attach(ctx context.Context, n carrier.Number, voiceURL, statusURL string) (carrier.Number, error) {
	if c.rest.connection == "" {
		return carrier.Number{}, carrier.Classify(carrier.ErrInvalid, errors.New("TELNYX_CONNECTION_ID is not set: set it to the id of the Call Control Application to attach numbers to"))
	}
	if u, err := url.Parse(voiceURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return carrier.Number{}, carrier.Classify(carrier.ErrInvalid, fmt.Errorf("webhook URL %q is not an http(s) URL", voice.Clip(voiceURL, 100)))
	}
	pn, err := c.rest.SetConnection(ctx, n.Ref, c.rest.connection)
	if err != nil {
		return carrier.Number{}, err
	}
	app, err := c.rest.SetWebhookURL(ctx, c.rest.connection, voiceURL)
	if err != nil {
		return carrier.Number{}, err
	}
	return c.numberOf(pn, app.WebhookEventURL), nil
}

// AttachNotice says what attaching a number to the application did to the others: the
// numbers on TELNYX_CONNECTION_ID besides except, whose calls now reach the same URL.
// Empty when there are none.
func (c *Control) AttachNotice(ctx context.Context, except string) (string, error) {
	ns, err := c.rest.Numbers(ctx)
	if err != nil {
		return "", err
	}
	var others []string
	for _, n := range ns {
		if n.ConnectionID == c.rest.connection && n.PhoneNumber != except {
			others = append(others, n.PhoneNumber)
		}
	}
	if len(others) == 0 {
		return "", nil
	}
	return fmt.Sprintf("Telnyx sends the calls of every number on Call Control Application %s to its one webhook URL: %s now reach Handset too",
		c.rest.connection, strings.Join(others, ", ")), nil
}

// ourWebhook is the application's webhook URL when any of ns is on it ("" otherwise).
func (c *Control) ourWebhook(ctx context.Context, ns ...PhoneNumber) (string, error) {
	if c.rest.connection == "" {
		return "", nil
	}
	for _, n := range ns {
		if n.ConnectionID == c.rest.connection {
			app, err := c.rest.Application(ctx, c.rest.connection)
			return app.WebhookEventURL, err
		}
	}
	return "", nil
}

// numberOf is n as the contract words it: a number on our application has its webhook
// URL as both voice and status URL; one on another connection names it as the override.
func (c *Control) numberOf(n PhoneNumber, hook string) carrier.Number {
	out := carrier.Number{Ref: n.ID, PhoneNumber: n.PhoneNumber, FriendlyName: n.ConnectionName}
	switch {
	case n.ConnectionID != "" && n.ConnectionID == c.rest.connection:
		out.VoiceURL, out.VoiceMethod, out.StatusCallback = hook, "POST", hook
	case n.ConnectionID != "":
		out.Override = n.ConnectionID // worded by Numbers.Override: "different connection 999"
		if n.ConnectionName != "" {
			out.Override += " (" + n.ConnectionName + ")"
		}
	}
	return out
}

// ClientState is what Handset carries in a call's client_state: Telnyx echoes it in every
// event of the call, and it is covered by the webhook signature (a URL query is not).
type ClientState struct {
	CallID  voice.CallID          `json:"call"`
	Machine carrier.MachinePolicy `json:"machine,omitempty"`
}

// maxClientState bounds an encoded client_state Handset reads or writes.
const maxClientState = 1024

// EncodeClientState is s as client_state: base64 of its JSON.
func EncodeClientState(s ClientState) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	out := base64.StdEncoding.EncodeToString(data)
	if len(out) > maxClientState {
		return "", fmt.Errorf("client state is %d bytes, more than %d", len(out), maxClientState)
	}
	return out, nil
}

// DecodeClientState reads a client_state Handset wrote; anything else (too long, not
// base64, not its JSON, a bad call id or policy) is refused.
func DecodeClientState(encoded string) (ClientState, error) {
	if len(encoded) > maxClientState {
		return ClientState{}, fmt.Errorf("client state is %d bytes, more than %d", len(encoded), maxClientState)
	}
	data, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return ClientState{}, fmt.Errorf("client state is not base64: %w", err)
	}
	var s ClientState
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return ClientState{}, fmt.Errorf("client state is not Handset's: %w", err)
	}
	if dec.More() {
		return ClientState{}, errors.New("client state is not Handset's: data after its JSON")
	}
	return s, s.check()
}

// maxCallID bounds a call id in client state.
const maxCallID = 128

// check refuses a state with no call id, a call id that is not printable ASCII, or an
// unknown policy.
func (s ClientState) check() error {
	if s.CallID == "" || len(s.CallID) > maxCallID {
		return fmt.Errorf("client state call id %q is empty or longer than %d bytes", voice.Clip(string(s.CallID), 64), maxCallID)
	}
	for i := 0; i < len(s.CallID); i++ {
		if s.CallID[i] <= ' ' || s.CallID[i] >= 0x7f {
			return fmt.Errorf("client state call id %q holds a character a call id cannot", voice.Clip(string(s.CallID), 64))
		}
	}
	if !s.Machine.Valid() {
		return fmt.Errorf("client state machine policy %q is not hangup, message or talk", voice.Clip(string(s.Machine), 32))
	}
	return nil
}

// HangupCause is a call.hangup event's hangup_cause as a final status; answered says
// whether the call had been answered. An unknown cause is failed before the answer and
// completed after it: a call someone answered did connect, and "failed" would tell an
// outbound job the carrier could not connect it (a permanent failure, no delivery).
func HangupCause(cause string, answered bool) carrier.Status {
	switch cause {
	case "normal_clearing", "time_limit":
		if answered {
			return carrier.StatusCompleted
		}
		return carrier.StatusCanceled
	case "user_busy":
		return carrier.StatusBusy
	case "timeout", "no_answer":
		return carrier.StatusNoAnswer
	case "originator_cancel":
		return carrier.StatusCanceled
	case "call_rejected", "not_found":
		return carrier.StatusFailed
	case "unspecified":
		if answered {
			return carrier.StatusCompleted
		}
		return carrier.StatusFailed
	}
	if answered {
		return carrier.StatusCompleted
	}
	return carrier.StatusFailed
}

// Machine detection events.
const (
	EventMachineDetectionEnded        = "call.machine.detection.ended"
	EventMachinePremiumDetectionEnded = "call.machine.premium.detection.ended"
	EventMachineGreetingEnded         = "call.machine.greeting.ended"
	EventMachinePremiumGreetingEnded  = "call.machine.premium.greeting.ended"
)

// MachineVerdict is a machine detection event's result as the contract's verdict; ""
// for an event or result it does not know.
func MachineVerdict(eventType, result string) carrier.AnsweredBy {
	switch eventType {
	case EventMachineDetectionEnded, EventMachinePremiumDetectionEnded:
		switch result {
		case "human", "human_residence", "human_business":
			return carrier.AnsweredHuman
		case "machine":
			return carrier.AnsweredMachine
		case "silence":
			return carrier.AnsweredSilence
		case "fax_detected":
			return carrier.AnsweredFax
		case "not_sure":
			return carrier.AnsweredUnknown
		}
	case EventMachineGreetingEnded, EventMachinePremiumGreetingEnded:
		switch result {
		case "beep_detected":
			return carrier.AnsweredBeep
		case "ended", "not_sure":
			return carrier.AnsweredOther // a greeting ended: a machine, its beep unheard
		}
	}
	return ""
}
