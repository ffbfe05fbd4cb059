package twilio

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/voice"
)

const testAuthToken = "test-auth-token"

// newMapMemory is a Memory in maps: the store's semantics (first answer kept, a stream
// opens once) for one process. Several carriers sharing one play several nodes on one store.
func newMapMemory() *carriertest.Memory { return carriertest.NewMemory() }

// node is one carrier on its own mux, counting the calls it admits.
type node struct {
	c        *Carrier
	mux      *http.ServeMux
	logs     *carriertest.Logs
	admitted atomic.Int32
	statuses atomic.Int32
	draining atomic.Bool
}

func newNode(t *testing.T, mem carrier.Memory, opts Options) *node {
	t.Helper()
	n := &node{mux: http.NewServeMux(), logs: &carriertest.Logs{}}
	opts.AuthToken = testAuthToken
	opts.Memory = mem
	opts.Logger = slog.New(slog.NewTextHandler(n.logs, nil))
	opts.Draining = n.draining.Load
	opts.OnProgress = func(carrier.Progress) { n.statuses.Add(1) }
	opts.Admit = func(leg voice.Leg) (<-chan struct{}, error) {
		n.admitted.Add(1)
		done := make(chan struct{})
		go func() { defer close(done); _ = leg.Run(context.Background(), nopSink{}) }()
		return done, nil
	}
	n.c = New(opts)
	n.c.Register(n.mux)
	return n
}

type nopSink struct{}

func (nopSink) Audio([]byte)    {}
func (nopSink) Mark(string)     {}
func (nopSink) DTMF(string)     {}
func (nopSink) Malformed(error) {}

// webhook is a voice webhook as Twilio sends it, signed over signURL.
type webhook struct {
	signURL    string // default http://voice.test/twilio/voice
	callSid    string
	idem       string // I-Twilio-Idempotency-Token; empty: none
	remoteAddr string // default 192.0.2.10:40000
	host       string // default voice.test
	header     http.Header
	params     url.Values // extra form values
}

func (n *node) post(t *testing.T, w webhook) *httptest.ResponseRecorder {
	t.Helper()
	if w.signURL == "" {
		w.signURL = "http://voice.test/twilio/voice"
	}
	form := url.Values{"CallSid": {w.callSid}, "From": {"+15550100001"}, "To": {"+15550100002"}, "Direction": {"inbound"}}
	for k, v := range w.params {
		form[k] = v
	}
	target, _ := url.Parse(w.signURL)
	r := httptest.NewRequest(http.MethodPost, target.RequestURI(), strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Twilio-Signature", Signature(testAuthToken, w.signURL, form))
	if w.idem != "" {
		r.Header.Set(IdempotencyHeader, w.idem)
	}
	for k, v := range w.header {
		r.Header[k] = v
	}
	r.Host = "voice.test"
	if w.host != "" {
		r.Host = w.host
	}
	r.RemoteAddr = "192.0.2.10:40000"
	if w.remoteAddr != "" {
		r.RemoteAddr = w.remoteAddr
	}
	rec := httptest.NewRecorder()
	n.mux.ServeHTTP(rec, r)
	return rec
}

// streamToken is the handset_token of a webhook's TwiML answer.
func streamToken(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	tw, err := twiliocaller.ParseTwiML(rec.Body.Bytes())
	if err != nil || tw.Parameters[TokenParameter] == "" {
		t.Fatalf("answer %d is not TwiML with a stream token (%v):\n%s", rec.Code, err, rec.Body.String())
	}
	return tw.Parameters[TokenParameter]
}

// openStream dials n's media stream for callSid with token, through a real server, and
// reports what happened.
func openStream(t *testing.T, n *node, callSid, token string, wait time.Duration) twiliocaller.ProbeResult {
	t.Helper()
	srv := httptest.NewServer(n.mux)
	defer srv.Close()
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/twilio/stream"
	res, err := twiliocaller.DialStream(context.Background(), twiliocaller.StreamProbe{
		URL: u, AuthToken: testAuthToken, CallSid: callSid,
		Parameters: map[string]string{TokenParameter: token}, Wait: wait,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// acceptWait is how long an accepted stream is held open before the probe hangs up; a
// refusal closes it at once, so refusals are waited for much longer.
const (
	acceptWait = 300 * time.Millisecond
	refuseWait = 10 * time.Second
)

// TestRepeatedVoiceWebhook: a retry before the stream opens gets the first answer (the same
// token, never a second one), whatever idempotency token it carries; once the stream has
// opened a repeat is refused with 409 and logged, and the token opens no second stream.
func TestRepeatedVoiceWebhook(t *testing.T) {
	n := newNode(t, newMapMemory(), Options{})
	first := n.post(t, webhook{callSid: "CA1", idem: "idem-1"})
	if first.Code != http.StatusOK {
		t.Fatalf("first webhook: %d %s", first.Code, first.Body)
	}
	token := streamToken(t, first)
	for _, idem := range []string{"idem-1", "idem-other", ""} {
		again := n.post(t, webhook{callSid: "CA1", idem: idem})
		if again.Code != http.StatusOK || !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
			t.Errorf("repeat with idempotency token %q before the stream: %d, same answer %v; want the first answer",
				idem, again.Code, bytes.Equal(again.Body.Bytes(), first.Body.Bytes()))
		}
	}
	if !strings.Contains(n.logs.String(), "carrier_retry=true") || !strings.Contains(n.logs.String(), "carrier_retry=false") {
		t.Errorf("retries and other repeats are not told apart in the log:\n%s", n.logs)
	}

	if res := openStream(t, n, "CA1", token, acceptWait); !res.Accepted() {
		t.Fatalf("the call's stream was refused: %+v\n%s", res, n.logs)
	}
	for _, idem := range []string{"idem-1", "idem-2"} {
		late := n.post(t, webhook{callSid: "CA1", idem: idem})
		if late.Code != http.StatusConflict || !strings.Contains(late.Body.String(), "call already connected") {
			t.Errorf("repeat (idempotency token %q) after the stream opened: %d %q, want 409", idem, late.Code, late.Body)
		}
	}
	if !strings.Contains(n.logs.String(), "refused a repeated voice webhook") {
		t.Errorf("the refused replay was not logged:\n%s", n.logs)
	}
	if res := openStream(t, n, "CA1", token, refuseWait); res.Accepted() || !strings.Contains(res.Reason, "already used") {
		t.Errorf("second stream with the token: %+v, want it refused as already used", res)
	}
	if got := n.admitted.Load(); got != 1 {
		t.Errorf("%d calls admitted, want 1", got)
	}
	// Another call is not affected.
	if other := n.post(t, webhook{callSid: "CA2"}); other.Code != http.StatusOK || streamToken(t, other) == token {
		t.Errorf("another call: %d, want its own answer", other.Code)
	}
}

// TestStreamOpensOnceAcrossNodes: the token a webhook answered on one node opens one stream
// on whichever node it reaches, and no second one on any node.
func TestStreamOpensOnceAcrossNodes(t *testing.T) {
	mem := newMapMemory()
	a, b := newNode(t, mem, Options{}), newNode(t, mem, Options{})
	token := streamToken(t, a.post(t, webhook{callSid: "CA1"}))
	if res := openStream(t, b, "CA1", token, acceptWait); !res.Accepted() {
		t.Fatalf("stream on the other node refused: %+v", res)
	}
	for name, n := range map[string]*node{"the node that answered": a, "the node that streamed": b} {
		if res := openStream(t, n, "CA1", token, refuseWait); res.Accepted() || !strings.Contains(res.Reason, "already used") {
			t.Errorf("replayed stream on %s: %+v, want it refused", name, res)
		}
	}
	// A repeat of the webhook, on either node, is refused too.
	if rec := a.post(t, webhook{callSid: "CA1"}); rec.Code != http.StatusConflict {
		t.Errorf("repeated webhook on the first node: %d, want 409", rec.Code)
	}
	if got := a.admitted.Load() + b.admitted.Load(); got != 1 {
		t.Errorf("%d calls admitted across the nodes, want 1", got)
	}
}

// TestMachineHangupAnsweredOnce: a retried webhook for a call a machine answered gets the
// same hang-up, and the declined call is reported once.
func TestMachineHangupAnsweredOnce(t *testing.T) {
	n := newNode(t, newMapMemory(), Options{})
	w := webhook{signURL: "http://voice.test/twilio/voice?handset_call=c1&handset_machine=hangup", callSid: "CA1",
		params: url.Values{"AnsweredBy": {"machine_start"}, "Direction": {"outbound-api"}}}
	for range 2 {
		if rec := n.post(t, w); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "<Hangup/>") {
			t.Fatalf("machine webhook: %d %s", rec.Code, rec.Body)
		}
	}
	if got := n.statuses.Load(); got != 1 {
		t.Errorf("declined call reported %d times, want once", got)
	}
}

// TestVoiceWebhookWithoutMemory: when the store fails, a webhook is refused (503: Twilio
// tries the fallback URL) rather than answered without replay protection.
func TestVoiceWebhookWithoutMemory(t *testing.T) {
	mem := newMapMemory()
	mem.Fail(errors.New("database is down"))
	n := newNode(t, mem, Options{})
	if rec := n.post(t, webhook{callSid: "CA1"}); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("webhook with the store down: %d %s, want 503", rec.Code, rec.Body)
	}
}

// TestVoiceWebhookWhileDraining: a draining node answers 503 (so Twilio uses the number's
// fallback URL) and remembers nothing: the call is the fallback's to answer.
func TestVoiceWebhookWhileDraining(t *testing.T) {
	mem := newMapMemory()
	n := newNode(t, mem, Options{})
	n.draining.Store(true)
	if rec := n.post(t, webhook{callSid: "CA1"}); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("webhook while draining: %d %s, want 503", rec.Code, rec.Body)
	}
	other := newNode(t, mem, Options{})
	if rec := other.post(t, webhook{callSid: "CA1"}); rec.Code != http.StatusOK {
		t.Errorf("the same call on a node that is not draining: %d, want it answered", rec.Code)
	}
	// A forged request still gets 403 while draining, not a hint.
	bad := webhook{callSid: "CA2", header: http.Header{"X-Twilio-Signature": {"Zm9yZ2Vk"}}}
	if rec := n.post(t, bad); rec.Code != http.StatusForbidden {
		t.Errorf("forged webhook while draining: %d, want 403", rec.Code)
	}
}

// TestForwardedHeadersOnlyFromTrustedProxies: without HANDSET_PUBLIC_URL, X-Forwarded-Host
// and -Proto make the signed URL only when the peer is a trusted proxy; anyone else is
// checked against the request's own Host and scheme, and so is its TwiML's stream URL.
func TestForwardedHeadersOnlyFromTrustedProxies(t *testing.T) {
	forwarded := http.Header{"X-Forwarded-Host": {"victim.example"}, "X-Forwarded-Proto": {"https"}}
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	n := newNode(t, newMapMemory(), Options{TrustedProxies: proxies})
	tests := []struct {
		name, peer, signURL string
		want                int
		stream              string // the stream URL the TwiML must name
	}{
		{"untrusted peer, signed over the forwarded URL", "203.0.113.5:4000", "https://victim.example/twilio/voice", http.StatusForbidden, ""},
		{"untrusted peer, signed over its own URL", "203.0.113.5:4000", "http://voice.test/twilio/voice", http.StatusOK, "ws://voice.test/twilio/stream"},
		{"trusted proxy, signed over the forwarded URL", "10.1.2.3:4000", "https://victim.example/twilio/voice", http.StatusOK, "wss://victim.example/twilio/stream"},
		{"trusted proxy over IPv6", "[::1]:4000", "https://victim.example/twilio/voice", http.StatusOK, "wss://victim.example/twilio/stream"},
		{"trusted proxy as a v4-mapped address", "[::ffff:10.9.9.9]:4000", "https://victim.example/twilio/voice", http.StatusOK, "wss://victim.example/twilio/stream"},
		{"loopback is not trusted unless listed", "127.0.0.1:4000", "https://victim.example/twilio/voice", http.StatusForbidden, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := n.post(t, webhook{callSid: "CA" + string(rune('a'+i)), remoteAddr: tt.peer, signURL: tt.signURL, header: forwarded})
			if rec.Code != tt.want {
				t.Fatalf("status %d %q, want %d", rec.Code, rec.Body, tt.want)
			}
			if tt.stream != "" {
				tw, err := twiliocaller.ParseTwiML(rec.Body.Bytes())
				if err != nil || tw.URL != tt.stream {
					t.Errorf("stream URL %q (%v), want %q", tw.URL, err, tt.stream)
				}
			}
		})
	}
	// A trusted proxy's header must name a scheme: anything else leaves the request's own.
	odd := http.Header{"X-Forwarded-Proto": {"javascript"}}
	if rec := n.post(t, webhook{callSid: "CAodd", remoteAddr: "10.0.0.1:1", header: odd}); rec.Code != http.StatusOK {
		t.Errorf("unknown forwarded scheme: %d, want the request's own http URL to count", rec.Code)
	}
}

// TestStreamForwardedHeadersOnlyFromTrustedProxies: the stream socket's signature follows
// the same rule, on a real connection (its peer is 127.0.0.1).
func TestStreamForwardedHeadersOnlyFromTrustedProxies(t *testing.T) {
	upgrade := func(trusted []netip.Prefix) int {
		t.Helper()
		n := newNode(t, newMapMemory(), Options{TrustedProxies: trusted})
		srv := httptest.NewServer(n.mux)
		defer srv.Close()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/twilio/stream", nil)
		req.Header.Set("X-Forwarded-Host", "victim.example")
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("X-Twilio-Signature", Signature(testAuthToken, "wss://victim.example/twilio/stream", nil))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := upgrade([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}); got != http.StatusForbidden {
		t.Errorf("forwarded stream URL from an untrusted peer: %d, want 403", got)
	}
	// From a trusted peer the signature holds; the request is no WebSocket upgrade, so the
	// library refuses it after the signature check, with something other than 403.
	if got := upgrade([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}); got == http.StatusForbidden {
		t.Errorf("forwarded stream URL from a trusted proxy: 403, want the signature accepted")
	}
}
