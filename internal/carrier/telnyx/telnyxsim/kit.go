package telnyxsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

// Kit is Telnyx's carrier kit (simkit.Kit): this fake's REST API and signed webhooks, and
// its simulated caller on the media stream. Register it with simkit.Register.
var Kit simkit.Kit = kit{}

type kit struct{}

func (kit) Name() string { return "telnyx" }

// DefaultNumber is the account's number when VendorOptions.Numbers is empty.
const DefaultNumber = "+15550100003"

// defaultCaller is who calls in when CallOptions.From is empty.
const defaultCaller = "+15550100901"

// forgerNumber places the calls whose streams the forgeries dial themselves.
const forgerNumber = "+15550100999"

// Start serves a fake Telnyx on a loopback port. VendorOptions.Secret is the API key
// (generated when empty): it authenticates Handset's requests and keys its stream tokens.
// The webhook signing key pair is the fake's own (Settings gives its public half).
func (kit) Start(ctx context.Context, o simkit.VendorOptions) (simkit.Vendor, error) {
	if o.Secret == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		o.Secret = "KEY" + hex.EncodeToString(b)
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
	if o.Frame%(20*time.Millisecond) != 0 || o.Frame < 0 {
		return nil, fmt.Errorf("telnyxsim: %v media frames (Telnyx sends multiples of 20 ms): %w", o.Frame, simkit.ErrUnsupported)
	}
	v := &vendor{opts: o, connection: randomDigits(19), dialled: make(chan struct{}, 1)}
	v.phoneOpts = phone.Options{Lean: o.Lean, Echo: o.Echo, Silent: o.Silent, Clock: o.Clock, Logger: o.Logger}
	phoneOpts := v.phoneOpts
	stream := StreamOptions{ChunkMS: int(o.Frame / time.Millisecond), PreStartFrames: o.EarlyFrames}
	v.caller = NewCaller(CallerOptions{Stream: stream, Phone: phoneOpts, HTTP: o.HTTPClient, DialURL: v.dialURL, Talk: v.talk, Logger: o.Logger})
	fo := Options{APIKey: o.Secret, ConnectionID: v.connection, OpenStream: v.caller.OpenStream, HTTP: o.HTTPClient, Callee: v.callee}
	if o.Clock != nil {
		fo.Now = o.Clock.Now
	}
	for _, n := range o.Numbers {
		fo.Numbers = append(fo.Numbers, Number{PhoneNumber: n, ConnectionID: v.connection})
	}
	v.fake = New(fo)
	v.caller.Bind(v.fake)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		v.fake.Close()
		return nil, fmt.Errorf("telnyxsim: listen: %w", err)
	}
	v.url = "http://" + ln.Addr().String()
	v.srv = &http.Server{Handler: v.fake, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = v.srv.Serve(ln) }()
	return v, nil
}

// FakeOf is the fake Telnyx behind v, a vendor this kit started (false for any other), for
// tests that break it on purpose.
func FakeOf(v simkit.Vendor) (*Server, bool) {
	tv, ok := v.(*vendor)
	if !ok {
		return nil, false
	}
	return tv.fake, true
}

// vendor is a running fake Telnyx.
type vendor struct {
	opts       simkit.VendorOptions
	phoneOpts  phone.Options // every caller's line, unless a call has its own
	connection string
	fake       *Server
	caller     *Caller
	srv        *http.Server
	url        string
	dialled    chan struct{} // a token per outbound call placed

	mu                   sync.Mutex
	publicURL, handsetAt string // where Handset believes it is, and where it is reached
}

func (v *vendor) Secret() string { return v.opts.Secret }

// Settings are Telnyx's credentials, the fake's public key and API URL. The application's
// webhook URL becomes publicURL's.
func (v *vendor) Settings(publicURL string) []string {
	v.mu.Lock()
	v.publicURL = strings.TrimSuffix(publicURL, "/")
	v.mu.Unlock()
	if publicURL != "" {
		_ = v.pointAt(context.Background(), strings.TrimSuffix(publicURL, "/")+webhookPath)
	}
	return []string{
		"TELNYX_API_KEY=" + v.opts.Secret,
		"TELNYX_PUBLIC_KEY=" + v.fake.PublicKeyBase64(),
		"TELNYX_CONNECTION_ID=" + v.connection,
		"HANDSET_TELNYX_API_URL=" + v.url + "/v2",
		"HANDSET_PHONE_NUMBER=" + v.opts.Numbers[0],
	}
}

// webhookPath is where Handset takes Telnyx's events.
const webhookPath = "/telnyx/webhook"

// pointAt sets the application's webhook URL, as a person would in the portal.
func (v *vendor) pointAt(ctx context.Context, hook string) error {
	body, _ := json.Marshal(map[string]any{"webhook_event_url": hook})
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, v.url+"/v2/call_control_applications/"+v.connection, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+v.opts.Secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := v.opts.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("telnyxsim: point the application at %s: %s", hook, resp.Status)
	}
	return nil
}

// dialURL maps a stream URL on Handset's public URL to the address Handset is reached at.
func (v *vendor) dialURL(streamURL string) string {
	v.mu.Lock()
	public, at := v.publicURL, v.handsetAt
	v.mu.Unlock()
	if public == "" || at == "" || public == at {
		return streamURL
	}
	if rest, ok := strings.CutPrefix(streamURL, wsURL(public)); ok {
		return wsURL(at) + rest
	}
	return streamURL
}

// reach notes where Handset is reached and points the application's webhook there.
func (v *vendor) reach(ctx context.Context, handsetURL, publicURL string) error {
	handsetURL = strings.TrimSuffix(handsetURL, "/")
	v.mu.Lock()
	v.handsetAt = handsetURL
	if publicURL != "" {
		v.publicURL = strings.TrimSuffix(publicURL, "/")
	}
	if v.publicURL == "" {
		v.publicURL = handsetURL
	}
	v.mu.Unlock()
	return v.pointAt(ctx, handsetURL+webhookPath)
}

// Call places an inbound call into Handset: call.initiated, Handset's answer command,
// then the media stream Telnyx opens, returned with the phone on it.
func (v *vendor) Call(ctx context.Context, handsetURL string, c simkit.CallOptions) (phone.Phone, error) {
	if err := v.reach(ctx, handsetURL, c.PublicURL); err != nil {
		return nil, err
	}
	from, to := c.From, c.To
	if from == "" {
		from = defaultCaller
	}
	if to == "" {
		to = v.opts.Numbers[0]
	}
	if c.Withheld {
		from = Withheld
	}
	attestation := c.Attestation
	if attestation == "" {
		attestation = c.Params["shaken_stir_attestation"]
	}
	ring := RingOptions{Attestation: attestation, CallControlID: c.Ref}
	if c.Lean || c.Echo != nil {
		// This call's line differs from the vendor's: its phone is set up before it rings.
		if ring.CallControlID == "" {
			ring.CallControlID = NewCallControlID()
		}
		o := v.phoneOpts
		o.Lean = o.Lean || c.Lean
		if c.Echo != nil {
			o.Echo = c.Echo
		}
		v.caller.Expect(ring.CallControlID, o)
	}
	call, err := v.fake.Ring(ctx, from, to, ring)
	if err != nil {
		v.caller.forget(ring.CallControlID)
		return nil, err
	}
	return v.phone(ctx, call.CallControlID)
}

// phone waits for call ccid's stream, or for the call to end without one.
func (v *vendor) phone(ctx context.Context, ccid string) (phone.Phone, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan Call, 1)
	go func() {
		if c, err := v.fake.WaitCall(ctx, ccid, func(c Call) bool { return !c.Alive }); err == nil {
			ended <- c
		}
	}()
	got := make(chan *phone.Call, 1)
	go func() {
		if p, err := v.caller.Phone(ctx, ccid); err == nil {
			got <- p
		}
	}()
	select {
	case p := <-got:
		return p, nil
	case c := <-ended:
		return nil, fmt.Errorf("telnyxsim: call %s ended (%s) before its stream opened; events %v", ccid, c.HangupCause, c.Events)
	case <-ctx.Done():
		return nil, fmt.Errorf("telnyxsim: call %s: no stream: %w", ccid, ctx.Err())
	}
}

// callee turns the kit-neutral callee into the fake's, and counts the call placed.
func (v *vendor) callee(to string) Callee {
	select {
	case v.dialled <- struct{}{}:
	default:
	}
	if v.opts.Answer == nil {
		return Callee{Hold: time.Second}
	}
	c := v.opts.Answer(to)
	out := Callee{RingFor: c.RingFor, Hold: c.Hold}
	switch c.Outcome {
	case simkit.Machine:
		out.Machine = true
	case simkit.Voicemail:
		out.Machine, out.Greeting = true, 200*time.Millisecond
	case simkit.Busy:
		out.Outcome = OutcomeBusy
	case simkit.Nobody:
		out.Outcome = OutcomeNoAnswer
	case simkit.Failed:
		out.Outcome = OutcomeFailed
	}
	if c.Talk != nil {
		out.Hold = 0 // the script decides when the callee hangs up
	} else if out.Hold == 0 {
		out.Hold = time.Second
	}
	return out
}

// talk runs an outbound callee's script on its phone.
func (v *vendor) talk(ctx context.Context, p phone.Phone, o StreamOrder) error {
	if o.Direction != "outgoing" || v.opts.Answer == nil {
		<-ctx.Done() // an inbound caller is the test's to drive
		return nil
	}
	if t := v.opts.Answer(o.To).Talk; t != nil {
		return t(ctx, p)
	}
	<-ctx.Done()
	return nil
}

// MalformedFrames are a frame that is not JSON, media whose payload is not base64, and an
// event Telnyx never sends. Handset reads no stream_id from the caller's frames, so they
// carry one of their own.
func (v *vendor) MalformedFrames(phone.Phone) []string {
	id := randomUUID()
	return []string{
		`not json at all`,
		`{"event":"media","sequence_number":"1000000","stream_id":"` + id + `","media":{"track":"inbound","chunk":"1000000","timestamp":"0","payload":"@@@not base64"}}`,
		`{"event":"bogus","sequence_number":"1000001","stream_id":"` + id + `"}`,
	}
}

var _ simkit.MalformedFramer = (*vendor)(nil)

func (v *vendor) Calls() []simkit.OutboundCall {
	var out []simkit.OutboundCall
	for _, c := range v.fake.Calls() {
		if c.Direction == "outgoing" {
			out = append(out, v.outbound(c))
		}
	}
	return out
}

// WaitCall waits until Handset has placed n outbound calls and returns the nth.
func (v *vendor) WaitCall(ctx context.Context, n int) (simkit.OutboundCall, error) {
	if n < 1 {
		return simkit.OutboundCall{}, fmt.Errorf("telnyxsim: call %d: calls count from 1", n)
	}
	// A dial wakes the wait; the short tick covers a call registered just after its wake.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if calls := v.Calls(); len(calls) >= n {
			return calls[n-1], nil
		}
		select {
		case <-v.dialled:
		case <-tick.C:
		case <-ctx.Done():
			return simkit.OutboundCall{}, fmt.Errorf("telnyxsim: waiting for outbound call %d: %w", n, ctx.Err())
		}
	}
}

// outbound is a fake call in the kit's words.
func (v *vendor) outbound(c Call) simkit.OutboundCall {
	oc := simkit.OutboundCall{Ref: c.CallControlID, To: c.To, From: c.From, Status: status(c), Detection: c.AMD, TransferredTo: c.TransferredTo}
	switch c.Verdict {
	case "":
	case "human", "human_residence", "human_business":
		oc.AnsweredBy = "human"
	default:
		oc.AnsweredBy = "machine"
	}
	v.caller.mu.Lock()
	if p, ok := v.caller.phones[c.CallControlID]; ok {
		oc.Phone = p
	}
	v.caller.mu.Unlock()
	return oc
}

// status is a call's state in the vendor-neutral words of carrier.Status.
func status(c Call) string {
	if c.Alive {
		if c.Answered {
			return "in-progress"
		}
		return "ringing"
	}
	switch c.HangupCause {
	case "user_busy":
		return "busy"
	case "timeout", "no_answer":
		return "no-answer"
	case "call_rejected", "not_found":
		return "failed"
	}
	if c.Answered {
		return "completed"
	}
	return "canceled"
}

// Close stops the API, the calls and their streams.
func (v *vendor) Close() error {
	v.fake.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := v.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("telnyxsim: stop the fake API: %w", err)
	}
	return nil
}

// DetectionFor is Telnyx's answering_machine_detection for a policy: a message waits for
// the beep (detect_beep), a hang-up needs only the verdict (detect).
func (v *vendor) DetectionFor(policy string) string {
	if policy == "message" {
		return "detect_beep"
	}
	return "detect"
}
