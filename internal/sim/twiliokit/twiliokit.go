// Package twiliokit is Twilio's carrier kit (simkit.Kit): the fake Twilio REST API
// (sim/faketwilio) for outbound calls and numbers, and the simulated Twilio caller
// (sim/twiliocaller) for inbound ones.
package twiliokit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"time"

	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
)

// Kit is Twilio's kit; register it with simkit.Register.
var Kit simkit.Kit = kit{}

type kit struct{}

func (kit) Name() string { return "twilio" }

// DefaultNumber is the account's number when VendorOptions.Numbers is empty.
const DefaultNumber = "+15550100002"

// WithheldCaller is From for a caller who withheld their number.
const WithheldCaller = "anonymous"

// Start serves a fake Twilio REST API on a loopback port.
// Twilio's streams carry 20 ms frames and start with start: Frame and EarlyFrames are
// refused.
func (kit) Start(ctx context.Context, o simkit.VendorOptions) (simkit.Vendor, error) {
	if o.Frame != 0 && o.Frame != 20*time.Millisecond {
		return nil, fmt.Errorf("twiliokit: %v media frames: %w", o.Frame, simkit.ErrUnsupported)
	}
	if o.EarlyFrames > 0 {
		return nil, fmt.Errorf("twiliokit: frames before start: %w", simkit.ErrUnsupported)
	}
	if o.Secret == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		o.Secret = hex.EncodeToString(b)
	}
	if len(o.Numbers) == 0 {
		o.Numbers = []string{DefaultNumber}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	fo := faketwilio.Options{
		AuthToken: o.Secret, InsecureStreamURL: true, HTTPClient: o.HTTPClient,
		Clock: o.Clock, Logger: o.Logger, Answer: answerWith(o.Answer),
	}
	for _, n := range o.Numbers {
		fo.Numbers = append(fo.Numbers, faketwilio.Number{PhoneNumber: n})
	}
	tw := faketwilio.New(fo)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		tw.Close()
		return nil, fmt.Errorf("twiliokit: listen: %w", err)
	}
	v := &vendor{opts: o, tw: tw, srv: &http.Server{Handler: tw, ReadHeaderTimeout: 10 * time.Second}, url: "http://" + ln.Addr().String()}
	go func() { _ = v.srv.Serve(ln) }()
	return v, nil
}

// answerWith turns the kit-neutral callee into faketwilio's.
func answerWith(answer func(to string) simkit.Callee) func(to string) faketwilio.Answer {
	if answer == nil {
		return nil
	}
	return func(to string) faketwilio.Answer {
		c := answer(to)
		a := faketwilio.Answer{RingFor: c.RingFor, Hold: c.Hold}
		switch c.Outcome {
		case simkit.Machine:
			a.AnsweredBy = "machine_start"
		case simkit.Voicemail:
			a.AnsweredBy = "machine_end_beep"
		case simkit.Busy:
			a.Outcome = faketwilio.OutcomeBusy
		case simkit.Nobody:
			a.Outcome = faketwilio.OutcomeNoAnswer
		case simkit.Failed:
			a.Outcome = faketwilio.OutcomeFailed
		}
		if talk := c.Talk; talk != nil {
			a.Talk = func(ctx context.Context, tc *twiliocaller.Call) error { return talk(ctx, tc) }
		}
		return a
	}
}

// vendor is a running fake Twilio.
type vendor struct {
	opts simkit.VendorOptions
	tw   *faketwilio.Server
	srv  *http.Server
	url  string
}

func (v *vendor) Secret() string { return v.opts.Secret }

// Settings are Twilio's credentials and the fake API's URL; Twilio's settings do not
// depend on the public URL.
func (v *vendor) Settings(string) []string {
	return []string{
		"TWILIO_ACCOUNT_SID=" + v.tw.AccountSID(),
		"TWILIO_AUTH_TOKEN=" + v.opts.Secret,
		"HANDSET_TWILIO_API_URL=" + v.url,
		"HANDSET_PHONE_NUMBER=" + v.opts.Numbers[0],
	}
}

// callerOptions are the simulated caller's options for one inbound call.
func (v *vendor) callerOptions(handsetURL string, c simkit.CallOptions) twiliocaller.Options {
	o := twiliocaller.Options{
		BaseURL: handsetURL, PublicURL: c.PublicURL, InsecureStreamURL: true,
		AccountSid: v.tw.AccountSID(), AuthToken: v.opts.Secret, From: c.From, To: c.To, CallSid: c.Ref,
		Params: c.Params, Lean: v.opts.Lean || c.Lean, Echo: v.opts.Echo, Silent: v.opts.Silent,
		HTTPClient: v.opts.HTTPClient, Clock: v.opts.Clock, Logger: v.opts.Logger,
	}
	if c.Echo != nil {
		o.Echo = c.Echo
	}
	if c.Withheld {
		o.From = WithheldCaller
	}
	if c.Attestation != "" {
		o.Params = maps.Clone(o.Params)
		if o.Params == nil {
			o.Params = map[string]string{}
		}
		o.Params["StirVerstat"] = "TN-Validation-Passed-" + c.Attestation
	}
	if o.To == "" {
		o.To = v.opts.Numbers[0]
	}
	return o
}

// Call places an inbound call: the signed voice webhook, the TwiML, the signed stream.
func (v *vendor) Call(ctx context.Context, handsetURL string, c simkit.CallOptions) (phone.Phone, error) {
	call, err := twiliocaller.Dial(ctx, v.callerOptions(handsetURL, c))
	if err != nil {
		return nil, err
	}
	return call, nil
}

// MalformedFrames are a frame that is not JSON, media on p's stream whose payload is not
// base64, and an event Twilio never sends.
func (v *vendor) MalformedFrames(p phone.Phone) []string {
	sid := ""
	if c, ok := p.(*twiliocaller.Call); ok {
		sid = c.StreamSid()
	}
	return []string{
		`not json at all`,
		`{"event":"media","streamSid":"` + sid + `","media":{"payload":"@@@not base64"}}`,
		`{"event":"bogus"}`,
	}
}

var _ simkit.MalformedFramer = (*vendor)(nil)

func (v *vendor) Calls() []simkit.OutboundCall {
	var out []simkit.OutboundCall
	for _, c := range v.tw.Calls() {
		out = append(out, v.outbound(c))
	}
	return out
}

func (v *vendor) WaitCall(ctx context.Context, n int) (simkit.OutboundCall, error) {
	if n < 1 {
		return simkit.OutboundCall{}, fmt.Errorf("twiliokit: call %d: calls count from 1", n)
	}
	calls, err := v.tw.WaitCalls(ctx, n)
	if err != nil {
		return simkit.OutboundCall{}, err
	}
	return v.outbound(calls[n-1]), nil
}

// outbound is a faketwilio call in the kit's words.
func (v *vendor) outbound(c faketwilio.Call) simkit.OutboundCall {
	oc := simkit.OutboundCall{Ref: c.SID, To: c.To, From: c.From, Status: c.Status, Detection: c.MachineDetection, TransferredTo: c.TransferredTo}
	switch c.AnsweredBy {
	case "":
	case "human":
		oc.AnsweredBy = "human"
	default:
		oc.AnsweredBy = "machine"
	}
	if s := v.tw.Stream(c.SID); s != nil {
		oc.Phone = s
	}
	return oc
}

// Close stops the API and the outbound calls it placed.
func (v *vendor) Close() error {
	v.tw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := v.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("twiliokit: stop the fake API: %w", err)
	}
	return nil
}

// DetectionFor is Twilio's MachineDetection for a policy: a message waits for the greeting's
// end (DetectMessageEnd), a hang-up needs only the first verdict (Enable).
func (v *vendor) DetectionFor(policy string) string {
	if policy == "message" {
		return "DetectMessageEnd"
	}
	return "Enable"
}
