package twilio

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
)

// Name is Twilio's name as call records and routes use it.
const Name = "twilio"

// Control is Twilio's control API as a carrier.Carrier: the REST client, placing calls
// whose webhooks reach the routes Carrier.Register serves. (Carrier is the webhook side.)
type Control struct{ rest *REST }

var _ carrier.Carrier = (*Control)(nil)

// NewControl checks o and returns Twilio's control API. It makes no request.
func NewControl(o RESTOptions) (*Control, error) {
	rest, err := NewREST(o)
	if err != nil {
		return nil, err
	}
	return &Control{rest: rest}, nil
}

// REST is the client underneath, for what only Twilio has.
func (c *Control) REST() *REST { return c.rest }

// Name is "twilio".
func (c *Control) Name() string { return Name }

// Dial places the call with POST Calls.json: the voice webhook and status callback are
// Handset's Twilio routes under d.PublicURL, and the machine policy decides the detection
// mode (message waits for the greeting's end, to speak after the beep).
func (c *Control) Dial(ctx context.Context, d carrier.Dial) (carrier.Call, error) {
	if !d.OnMachine.Valid() {
		return carrier.Call{}, carrier.Classify(carrier.ErrInvalid, fmt.Errorf("machine policy %q is not hangup, message or talk", d.OnMachine))
	}
	var detect string
	switch d.OnMachine {
	case carrier.MachineHangup:
		detect = MachineDetectionEnable
	case carrier.MachineMessage:
		detect = MachineDetectionMessageEnd
	}
	voiceURL, statusURL := OutboundURLs(d.PublicURL, d.CallID, d.OnMachine)
	info, err := c.rest.CreateCall(ctx, CallRequest{
		To: d.To, From: d.From, URL: voiceURL, StatusCallback: statusURL,
		MachineDetection: detect, Timeout: d.RingTimeout, TimeLimit: d.MaxDuration,
	})
	if err != nil {
		return carrier.Call{}, classify(err)
	}
	return callOf(info), nil
}

// Call fetches the call.
func (c *Control) Call(ctx context.Context, ref string) (carrier.Call, error) {
	info, err := c.rest.FetchCall(ctx, ref)
	if err != nil {
		return carrier.Call{}, classify(err)
	}
	return callOf(info), nil
}

// Hangup sets the call's status to completed.
func (c *Control) Hangup(ctx context.Context, ref string) error {
	return classify(c.rest.HangupCall(ctx, ref))
}

// Transfer redirects the live call to TwiML that dials to: Twilio ends the media stream
// and connects the caller to the number.
func (c *Control) Transfer(ctx context.Context, ref, to, callerID string) error {
	n, err := carrier.NormalizeNumber(to)
	if err != nil {
		return carrier.Classify(carrier.ErrInvalid, fmt.Errorf("transfer to: %w", err))
	}
	_, err = c.rest.RedirectCall(ctx, ref, dialTwiML(n, callerID))
	return classify(err)
}

// Account fetches the account.
func (c *Control) Account(ctx context.Context) (carrier.Account, error) {
	a, err := c.rest.Account(ctx)
	if err != nil {
		return carrier.Account{}, classify(err)
	}
	return carrier.Account{ID: a.SID, Name: a.FriendlyName, Status: a.Status, Trial: strings.EqualFold(a.Type, "Trial")}, nil
}

// Numbers lists the account's incoming phone numbers.
func (c *Control) Numbers(ctx context.Context) ([]carrier.Number, error) {
	ns, err := c.rest.Numbers(ctx)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]carrier.Number, len(ns))
	for i, n := range ns {
		out[i] = numberOf(n)
	}
	return out, nil
}

// Number finds one of the account's numbers.
func (c *Control) Number(ctx context.Context, e164 string) (carrier.Number, error) {
	n, err := c.rest.FindNumber(ctx, e164)
	if err != nil {
		return carrier.Number{}, classify(err)
	}
	return numberOf(n), nil
}

// Attach sets the number's voice URL (POST) and clears its TwiML app.
func (c *Control) Attach(ctx context.Context, n carrier.Number, voiceURL, statusURL string) (carrier.Number, error) {
	after, err := c.rest.SetVoiceURL(ctx, n.Ref, voiceURL, statusURL)
	if err != nil {
		return carrier.Number{}, classify(err)
	}
	return numberOf(after), nil
}

func callOf(i CallInfo) carrier.Call {
	status := carrier.Status(i.Status)
	if i.Status == "initiated" { // dialling: not ringing yet, as queued is
		status = carrier.StatusQueued
	}
	return carrier.Call{Ref: i.SID, To: i.To, From: i.From, Status: status,
		AnsweredBy: carrier.AnsweredBy(i.AnsweredBy), Duration: i.Duration}
}

func numberOf(n Number) carrier.Number {
	return carrier.Number{Ref: n.SID, PhoneNumber: n.PhoneNumber, FriendlyName: n.FriendlyName,
		VoiceURL: n.VoiceURL, VoiceMethod: n.VoiceMethod, Override: n.VoiceApplicationSID, StatusCallback: n.StatusCallback}
}

// classify attaches the contract's class to a REST error, keeping the *voice.ProviderError
// (and the *APIError inside it) for errors.As.
func classify(err error) error {
	return carrier.ClassifyProvider(err, func(err error) bool {
		var ae *APIError
		return errors.Is(err, ErrNumberNotFound) || (errors.As(err, &ae) && ae.Code == ErrorCodeNotFound)
	})
}

// dialTwiML is <Response><Dial>to</Dial></Response>, with callerId when set.
func dialTwiML(to, callerID string) string {
	type dial struct {
		CallerID string `xml:"callerId,attr,omitempty"`
		Number   string `xml:",chardata"`
	}
	out, _ := xml.Marshal(struct {
		XMLName xml.Name `xml:"Response"`
		Dial    dial     `xml:"Dial"`
	}{Dial: dial{CallerID: callerID, Number: to}})
	return xml.Header + string(out)
}
