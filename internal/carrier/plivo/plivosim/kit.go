package plivosim

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

// Kit is Plivo's carrier kit (simkit.Kit): this fake's REST API and V3-signed requests,
// and its simulated caller on the audio stream. Register it with simkit.Register.
var Kit simkit.Kit = kit{}

type kit struct{}

func (kit) Name() string { return "plivo" }

// DefaultNumber is the account's number when VendorOptions.Numbers is empty.
const DefaultNumber = "+15550100004"

// defaultCaller is who calls in when CallOptions.From is empty.
const defaultCaller = "+15550100902"

// forgerNumber places the calls whose streams the forgeries dial themselves.
const forgerNumber = "+15550100998"

// Handset's routes the application is pointed at.
const (
	answerPath = "/plivo/answer"
	hangupPath = "/plivo/hangup"
)

// Start serves a fake Plivo on a loopback port. VendorOptions.Secret is the auth token
// (generated when empty): it authenticates Handset's requests and signs the fake's.
func (kit) Start(ctx context.Context, o simkit.VendorOptions) (simkit.Vendor, error) {
	if o.Secret == "" {
		o.Secret = randomAlnum(40)
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
		return nil, fmt.Errorf("plivosim: %v media frames (the caller sends multiples of 20 ms): %w", o.Frame, simkit.ErrUnsupported)
	}
	v := &vendor{opts: o, dialled: make(chan struct{}, 1)}
	phoneOpts := phone.Options{Lean: o.Lean, Echo: o.Echo, Silent: o.Silent, Clock: o.Clock, Logger: o.Logger}
	stream := StreamOptions{ChunkMS: int(o.Frame / time.Millisecond), PreStartFrames: o.EarlyFrames}
	v.caller = NewCaller(CallerOptions{Stream: stream, Phone: phoneOpts, HTTP: o.HTTPClient, DialURL: v.dialURL, Talk: v.talk, Logger: o.Logger})
	fo := Options{AuthToken: o.Secret, HTTPClient: o.HTTPClient, OpenStream: v.caller.OpenStream, Callee: v.callee,
		DialURL: v.dialURL, Logger: o.Logger}
	for _, n := range o.Numbers {
		fo.Numbers = append(fo.Numbers, Number{Number: n, AppID: DefaultAppID})
	}
	v.fake = New(fo)
	v.caller.Bind(v.fake)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		v.fake.Close()
		return nil, fmt.Errorf("plivosim: listen: %w", err)
	}
	v.url = "http://" + ln.Addr().String()
	v.srv = &http.Server{Handler: v.fake, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = v.srv.Serve(ln) }()
	return v, nil
}

// vendor is a running fake Plivo.
type vendor struct {
	opts    simkit.VendorOptions
	fake    *Server
	caller  *Caller
	srv     *http.Server
	url     string
	dialled chan struct{} // a token per outbound call placed

	mu                   sync.Mutex
	publicURL, handsetAt string // where Handset believes it is, and where it is reached
}

func (v *vendor) Secret() string { return v.opts.Secret }

// Settings are Plivo's credentials, application and API URL. The application's answer
// and hangup URLs become publicURL's.
func (v *vendor) Settings(publicURL string) []string {
	publicURL = strings.TrimSuffix(publicURL, "/")
	v.mu.Lock()
	v.publicURL = publicURL
	v.mu.Unlock()
	if publicURL != "" {
		_ = v.pointAt(context.Background(), publicURL)
	}
	return []string{
		"PLIVO_AUTH_ID=" + v.fake.AuthID(),
		"PLIVO_AUTH_TOKEN=" + v.opts.Secret,
		"PLIVO_APP_ID=" + DefaultAppID,
		"HANDSET_PLIVO_API_URL=" + v.url,
		"HANDSET_PHONE_NUMBER=" + v.opts.Numbers[0],
	}
}

// pointAt sets the application's answer and hangup URLs under base, as a person would in
// the console.
func (v *vendor) pointAt(ctx context.Context, base string) error {
	form := url.Values{"answer_url": {base + answerPath}, "answer_method": {"POST"},
		"hangup_url": {base + hangupPath}, "hangup_method": {"POST"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.url+"/v1/Account/"+v.fake.AuthID()+"/Application/"+DefaultAppID+"/",
		strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.SetBasicAuth(v.fake.AuthID(), v.opts.Secret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := v.opts.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("plivosim: point the application at %s: %s", base, resp.Status)
	}
	return nil
}

// dialURL maps a URL under Handset's public URL (http or ws) to the address Handset is
// reached at.
func (v *vendor) dialURL(raw string) string {
	v.mu.Lock()
	public, at := v.publicURL, v.handsetAt
	v.mu.Unlock()
	if public == "" || at == "" || public == at {
		return raw
	}
	for _, pair := range [][2]string{{public, at}, {wsURL(public), wsURL(at)}} {
		if rest, ok := strings.CutPrefix(raw, pair[0]); ok {
			return pair[1] + rest
		}
	}
	return raw
}

// reach notes where Handset is reached and points the application at its public URL
// (what V3 signs; the requests go to handsetURL).
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
	public := v.publicURL
	v.mu.Unlock()
	return v.pointAt(ctx, public)
}

// Call rings Handset's number: Plivo fetches the answer URL, then opens the <Stream>
// Handset answered with; the phone on it is returned.
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
	ring := RingOptions{CallUUID: c.Ref, Withheld: c.Withheld, Attestation: c.Attestation, Params: c.Params}
	if ring.CallUUID == "" {
		ring.CallUUID = newUUID()
	}
	v.caller.Expect(ring.CallUUID, v.phoneOptions(c))
	call, err := v.fake.RingWith(ctx, from, to, ring)
	if err != nil {
		v.caller.mu.Lock()
		delete(v.caller.own, ring.CallUUID) // no stream will take them
		v.caller.mu.Unlock()
		return nil, err
	}
	return v.phone(ctx, call.CallUUID)
}

// phoneOptions are the vendor's phone options with c's own Lean and Echo over them.
func (v *vendor) phoneOptions(c simkit.CallOptions) phone.Options {
	o := v.caller.opts.Phone
	o.Lean = o.Lean || c.Lean
	if c.Echo != nil {
		o.Echo = c.Echo
	}
	return o
}

// MalformedFrames are frames Plivo's stream never carries: one that is not JSON, media
// whose payload is not base64, an event Plivo never sends, a checkpoint answer for a
// name Handset never sent, and a key press whose digit is not a string. Handset reads no
// streamId from the caller's frames, so they carry one of their own.
func (v *vendor) MalformedFrames(phone.Phone) []string {
	id := newUUID()
	return []string{
		`not json at all`,
		`{"event":"media","sequenceNumber":1000000,"streamId":"` + id + `","media":{"track":"inbound","timestamp":"0","chunk":1000000,"payload":"@@@not base64"}}`,
		`{"event":"bogus","sequenceNumber":1000001,"streamId":"` + id + `"}`,
		`{"event":"playedStream","sequenceNumber":1000002,"streamId":"` + id + `","name":"never-sent"}`,
		`{"event":"dtmf","sequenceNumber":1000003,"streamId":"` + id + `","dtmf":{"digit":5}}`,
	}
}

var _ simkit.MalformedFramer = (*vendor)(nil)

// phone waits for call callUUID's stream, or for the call to end without one.
func (v *vendor) phone(ctx context.Context, callUUID string) (phone.Phone, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan Call, 1)
	go func() {
		if c, err := v.fake.WaitCall(ctx, callUUID, func(c Call) bool { return Ended(c.Status) }); err == nil {
			ended <- c
		}
	}()
	got := make(chan *phone.Call, 1)
	go func() {
		if p, err := v.caller.Phone(ctx, callUUID); err == nil {
			got <- p
		}
	}()
	select {
	case p := <-got:
		return p, nil
	case c := <-ended:
		return nil, fmt.Errorf("plivosim: call %s ended (%s) before its stream opened; errors %v", callUUID, c.HangupCauseName, c.Errors)
	case <-ctx.Done():
		return nil, fmt.Errorf("plivosim: call %s: no stream: %w", callUUID, ctx.Err())
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
	case simkit.Machine, simkit.Voicemail:
		out.Machine = true
	case simkit.Busy:
		out.Outcome = OutcomeBusy
	case simkit.Nobody:
		out.Outcome = OutcomeNoAnswer
	case simkit.Failed:
		out.Outcome = OutcomeFailed
	}
	if c.Talk != nil {
		out.Hold = 0 // the script decides when the callee hangs up (0 is an hour)
	} else if out.Hold == 0 {
		out.Hold = time.Second
	}
	return out
}

// talk runs an outbound callee's script on its phone.
func (v *vendor) talk(ctx context.Context, p phone.Phone, o StreamOrder) error {
	call, ok := v.fake.Call(o.CallUUID)
	if !ok || call.Direction != "outbound" || v.opts.Answer == nil {
		<-ctx.Done() // an inbound caller is the test's to drive
		return nil
	}
	if t := v.opts.Answer(call.To).Talk; t != nil {
		return t(ctx, p)
	}
	<-ctx.Done()
	return nil
}

func (v *vendor) Calls() []simkit.OutboundCall {
	var out []simkit.OutboundCall
	for _, c := range v.fake.Calls() {
		if c.Direction == "outbound" {
			out = append(out, v.outbound(c))
		}
	}
	return out
}

// WaitCall waits until Handset has placed n outbound calls and returns the nth.
func (v *vendor) WaitCall(ctx context.Context, n int) (simkit.OutboundCall, error) {
	if n < 1 {
		return simkit.OutboundCall{}, fmt.Errorf("plivosim: call %d: calls count from 1", n)
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
			return simkit.OutboundCall{}, fmt.Errorf("plivosim: waiting for outbound call %d: %w", n, ctx.Err())
		}
	}
}

// outbound is a fake call in the kit's words.
func (v *vendor) outbound(c Call) simkit.OutboundCall {
	ref := c.RequestUUID
	oc := simkit.OutboundCall{Ref: ref, To: c.To, From: c.From, Status: kitStatus(c.Status), Detection: c.Detection, TransferredTo: c.TransferredTo}
	switch c.Verdict {
	case "true":
		oc.AnsweredBy = "machine"
	case "false":
		oc.AnsweredBy = "human"
	}
	if c.CallUUID != "" {
		v.caller.mu.Lock()
		if p, ok := v.caller.phones[c.CallUUID]; ok {
			oc.Phone = p
		}
		v.caller.mu.Unlock()
	}
	return oc
}

// kitStatus is a Plivo status in the vendor-neutral words of carrier.Status.
func kitStatus(s string) string {
	switch s {
	case StatusQueued:
		return "queued"
	case StatusCancel:
		return "canceled"
	}
	return s // ringing, in-progress, completed, busy, no-answer, failed: the same words
}

// Close stops the API, the calls and their streams.
func (v *vendor) Close() error {
	v.fake.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := v.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("plivosim: stop the fake API: %w", err)
	}
	return nil
}

// wsURL is an http(s) URL as ws(s).
func wsURL(u string) string {
	return strings.Replace(strings.Replace(u, "https://", "wss://", 1), "http://", "ws://", 1)
}

// randomAlnum is n random letters and digits.
func randomAlnum(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		k, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[k.Int64()]
	}
	return string(b)
}

// DetectionFor is Plivo's machine_detection for a policy: Plivo only detects and reports
// (it hears no beep), so every policy that acts on a machine asks for "true".
func (v *vendor) DetectionFor(string) string { return "true" }
