package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
)

// vendorSettings are the settings that make Handset use v (reached at publicURL) as its
// carrier: the vendor's own, and HANDSET_CARRIER, since the rig's defaults configure Twilio.
func vendorSettings(kit simkit.Kit, v simkit.Vendor, publicURL string) []string {
	return append(v.Settings(publicURL), registry.CarrierChoice+"="+kit.Name())
}

// startOutboundWith is serve with kit's fake vendor placing the outbound calls, answered
// as answer says. The vendor reaches Handset through a recording proxy that is Handset's
// public URL (outRig.inbound), and Handset reaches the vendor's API through another
// (outRig.outbound), so tests read both sides of the wire.
func startOutboundWith(t *testing.T, kit simkit.Kit, answer func(to string) simkit.Callee, transcripts []string, extra ...string) *outRig {
	t.Helper()
	v := startVendor(t, kit, simkit.VendorOptions{Numbers: []string{ourNumber}, Answer: answer})
	addr, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	inbound := newTap(t, "http://"+addr)
	settings, outbound := tapAPI(t, vendorSettings(kit, v, inbound.url()))
	settings = append(settings,
		"HANDSET_LISTEN="+addr, "HANDSET_PUBLIC_URL="+inbound.url(),
		"HANDSET_SESSION_KEY_FROM=caller_hash", "HANDSET_TRANSFER_ALLOW="+transferOK)
	r := startServe(t, transcripts, append(settings, extra...)...)
	r.kit, r.vendor = kit, v
	o := newOutRig(t, r)
	o.inbound, o.outbound = inbound, outbound
	return o
}

// newOutRig is the outbound rig over r, with serve's API token.
func newOutRig(t *testing.T, r *rig) *outRig {
	t.Helper()
	return &outRig{rig: r, token: apiToken(t, r)}
}

// placeFrom places an inbound call from number: through the rig's carrier kit when it
// has one (signed for Handset's public URL, when serve has one), else as Twilio would.
func (r *rig) placeFrom(ctx context.Context, from string) phone.Phone {
	r.t.Helper()
	if r.vendor != nil {
		return r.call(ctx, simkit.CallOptions{From: from, PublicURL: r.setting("HANDSET_PUBLIC_URL")})
	}
	return r.dial(ctx, func(o *twiliocaller.Options) { o.From = from })
}

// setting is the value serve was started with for key; "" when unset.
func (r *rig) setting(key string) string {
	for _, kv := range r.environ {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v
		}
	}
	return ""
}

// outboundCall waits for the nth call Handset placed through the vendor (from 1).
func (o *outRig) outboundCall(n int) simkit.OutboundCall {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := o.vendor.WaitCall(ctx, n)
	if err != nil {
		o.t.Fatalf("outbound call %d: %v\n%s", n, err, o.logs.String())
	}
	return c
}

// tap is a recording reverse proxy: each request that passes, with the status it got.
// WebSocket upgrades pass too (recorded with 101).
type tap struct {
	srv   *httptest.Server
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	seen  []tapped
}

// tapped is one request through a tap.
type tapped struct {
	Method, Path string
	Query        url.Values
	Body         []byte
	Status       int // 502 when the target could not be reached
}

// maxTapped bounds a body a tap keeps; the rigs' requests are far smaller.
const maxTapped = 1 << 20

type tapEntry struct{}

// newTap proxies to target (scheme and host), keeping the Host the client used, as a
// load balancer in front of it would; it stops with the test.
func newTap(t *testing.T, target string) *tap {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{}
	tp.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			tp.record(resp.Request.Context(), resp.StatusCode)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			tp.record(r.Context(), http.StatusBadGateway)
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	tp.srv = httptest.NewServer(tp)
	t.Cleanup(tp.srv.Close)
	return tp
}

func (tp *tap) url() string { return tp.srv.URL }

func (tp *tap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxTapped+1))
	if err != nil || len(body) > maxTapped {
		http.Error(w, "tap: body unreadable or over 1 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	e := &tapped{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body}
	tp.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tapEntry{}, e)))
}

func (tp *tap) record(ctx context.Context, status int) {
	e, ok := ctx.Value(tapEntry{}).(*tapped)
	if !ok {
		return
	}
	e.Status = status
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.seen = append(tp.seen, *e)
}

// requests are the requests answered so far, in the order their answers came.
func (tp *tap) requests() []tapped {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]tapped(nil), tp.seen...)
}

// tapAPI puts a tap in front of the vendor's API: the setting naming its URL (the one
// ending in _API_URL) points at the tap instead. Nil when the vendor names no API URL.
func tapAPI(t *testing.T, settings []string) ([]string, *tap) {
	t.Helper()
	out := append([]string(nil), settings...)
	for i, kv := range out {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasSuffix(k, "_API_URL") {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			t.Fatalf("%s is not a URL: %q", k, v)
		}
		tp := newTap(t, u.Scheme+"://"+u.Host)
		out[i] = k + "=" + tp.url() + u.Path
		return out, tp
	}
	return out, nil
}

// webhooksAnswered fails t for each request of the vendor's (webhooks, callbacks, stream
// upgrades) that Handset did not answer with success.
func (o *outRig) webhooksAnswered(t *testing.T) {
	t.Helper()
	if o.inbound == nil {
		return
	}
	for _, rq := range o.inbound.requests() {
		if rq.Status/100 != 2 && rq.Status != http.StatusSwitchingProtocols {
			t.Errorf("%s's %s %s answered %d", o.kit.Name(), rq.Method, rq.Path, rq.Status)
		}
	}
}

// detectionAsked checks that every call Handset placed asked the vendor for the machine
// detection of policy ("hangup" or "message"), as the vendor's kit words it.
func (o *outRig) detectionAsked(t *testing.T, policy string) {
	t.Helper()
	words, ok := o.vendor.(simkit.DetectionWords)
	if !ok {
		t.Errorf("%s's kit does not say which machine detection each policy needs (simkit.DetectionWords)", o.kit.Name())
		return
	}
	want := words.DetectionFor(policy)
	calls := o.vendor.Calls()
	for _, c := range calls {
		if c.Detection != want {
			t.Errorf("%s call %s asked for machine detection %q, want %q (on_machine %s)", o.kit.Name(), c.Ref, c.Detection, want, policy)
		}
	}
	if len(calls) == 0 {
		t.Errorf("no call was placed through %s: %s", o.kit.Name(), describeTapped(o.outbound.requests()))
	}
}

func describeTapped(rqs []tapped) string {
	var b strings.Builder
	for _, rq := range rqs {
		fmt.Fprintf(&b, "\n  %s %s -> %d", rq.Method, rq.Path, rq.Status)
	}
	return b.String()
}

// commandWire reads a carrier whose call commands carry an idempotency key, so that a
// command repeated by another node (or on a webhook's retry) takes effect once.
type commandWire struct {
	// command is the call, action and key of a command request; ok false for another.
	command func(tapped) (call, action, key string, ok bool)
	// streamAction is the command that opens an answered outbound call's stream.
	streamAction string
	// webhookPath is Handset's route for the vendor's webhooks, which the vendor sends
	// again (to any node) when an answer does not come back.
	webhookPath string
}

// commandWires are the carriers whose command keys the multi-node test reads.
var commandWires = map[string]commandWire{
	"telnyx": {
		command: func(rq tapped) (call, action, key string, ok bool) {
			rest, found := strings.CutPrefix(rq.Path, "/v2/calls/")
			if rq.Method != http.MethodPost || !found {
				return "", "", "", false
			}
			call, action, found = strings.Cut(rest, "/actions/")
			if !found {
				return "", "", "", false
			}
			var b struct {
				CommandID string `json:"command_id"`
			}
			_ = json.Unmarshal(rq.Body, &b)
			return call, action, b.CommandID, true
		},
		streamAction: "streaming_start", webhookPath: "/telnyx/webhook",
	},
}

// loseAnswers makes b lose Handset's answer to every nth webhook of a carrier whose
// webhooks are sent again when unanswered: the node acts on the webhook, the vendor sees
// a failure and sends it again, to whichever node the balancer picks. A carrier without
// command keys keeps every answer.
func loseAnswers(kit simkit.Kit, b *balancer, n int64) {
	w, ok := commandWires[kit.Name()]
	if !ok {
		return
	}
	var seen atomic.Int64
	b.lose = func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Path == w.webhookPath && seen.Add(1)%n == 0
	}
}

// commandsOnce checks that every placed call's stream was asked for, and that every
// repeat of a command (any node's) carried the key of the first, so the vendor acted on
// it once. A carrier without command keys has nothing to check.
func commandsOnce(t *testing.T, kit simkit.Kit, api *tap, placed []simkit.OutboundCall) {
	t.Helper()
	w, ok := commandWires[kit.Name()]
	if !ok || api == nil {
		t.Logf("%s: no command keys to check", kit.Name())
		return
	}
	keys := map[string]map[string]map[string]bool{} // call -> action -> keys
	sent := 0
	for _, rq := range api.requests() {
		call, action, key, ok := w.command(rq)
		if !ok {
			continue
		}
		sent++
		if key == "" {
			t.Errorf("%s %s sent without a command key", kit.Name(), rq.Path)
		}
		if keys[call] == nil {
			keys[call] = map[string]map[string]bool{}
		}
		if keys[call][action] == nil {
			keys[call][action] = map[string]bool{}
		}
		keys[call][action][key] = true
	}
	distinct := 0
	for call, actions := range keys {
		for action, ks := range actions {
			distinct++
			if len(ks) != 1 {
				t.Errorf("call %s: %s sent with %d different keys %v: the vendor would act on each", call, action, len(ks), ks)
			}
		}
	}
	for _, c := range placed {
		if len(keys[c.Ref][w.streamAction]) == 0 {
			t.Errorf("call %s: no %s was sent", c.Ref, w.streamAction)
		}
	}
	t.Logf("%s: %d commands sent, %d distinct (call, action) pairs", kit.Name(), sent, distinct)
}
