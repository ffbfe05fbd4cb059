package telnyx

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/mediastream"
	"github.com/handset-voice/handset/internal/voice"
)

const testAPIKey = "KEY0123456789"

// sentCommand is one command the carrier sent.
type sentCommand struct {
	ccid, action string
	body         map[string]any
	raw          []byte
}

// rig is a Telnyx carrier mounted on a mux, with a signing key, an in-memory memory and
// a recorder standing in for the REST API.
type rig struct {
	t        *testing.T
	c        *Carrier
	mux      *http.ServeMux
	priv     ed25519.PrivateKey
	memory   *carriertest.Memory
	now      time.Time
	draining bool

	mu       sync.Mutex
	commands []sentCommand
	fail     func(action string) error // nil: every command succeeds
	progress []carrier.Progress
	onSend   func(sentCommand) // runs inside the command, before it returns
}

func newRig(t *testing.T, tweak func(*Options)) *rig {
	t.Helper()
	pub, priv := newKey(t)
	r := &rig{t: t, priv: priv, memory: carriertest.NewMemory(), now: time.Unix(1_800_000_000, 0)}
	opts := Options{
		PublicKey: pub, APIKey: testAPIKey, PublicURL: "https://handset.example",
		Memory: r.memory, Now: func() time.Time { return r.now },
		Draining: func() bool { return r.draining },
		Admit:    func(voice.Leg) (<-chan struct{}, error) { return make(chan struct{}), nil },
		OnProgress: func(p carrier.Progress) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.progress = append(r.progress, p)
		},
		Command: r.command,
	}
	if tweak != nil {
		tweak(&opts)
	}
	r.c = New(opts)
	r.mux = http.NewServeMux()
	r.c.Register(r.mux)
	return r
}

func (r *rig) command(_ context.Context, ccid, action string, body any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	cmd := sentCommand{ccid: ccid, action: action, raw: raw}
	if err := json.Unmarshal(raw, &cmd.body); err != nil {
		return err
	}
	r.mu.Lock()
	fail, onSend := r.fail, r.onSend
	r.mu.Unlock()
	if onSend != nil {
		onSend(cmd)
	}
	if fail != nil {
		if err := fail(action); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commands = append(r.commands, cmd)
	return nil
}

func (r *rig) sent() []sentCommand {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sentCommand(nil), r.commands...)
}

func (r *rig) progressed() []carrier.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]carrier.Progress(nil), r.progress...)
}

// post delivers body to the webhook, signed at ts with key (nil: the rig's own).
func (r *rig) postSigned(body []byte, ts string, key ed25519.PrivateKey, target string) *httptest.ResponseRecorder {
	if key == nil {
		key = r.priv
	}
	if target == "" {
		target = WebhookPath
	}
	req := httptest.NewRequest(http.MethodPost, "https://handset.example"+target, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if ts != "" {
		req.Header.Set(TimestampHeader, ts)
		req.Header.Set(SignatureHeader, signed(r.t, key, ts, body))
	}
	w := httptest.NewRecorder()
	r.mux.ServeHTTP(w, req)
	return w
}

func (r *rig) post(body []byte) *httptest.ResponseRecorder {
	return r.postSigned(body, strconv.FormatInt(r.now.Unix(), 10), nil, "")
}

// eventBody is a Call Control event as Telnyx sends it.
func eventBody(id, kind string, payload map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"data": map[string]any{"record_type": "event", "event_type": kind, "id": id,
			"occurred_at": "2026-11-29T02:00:00.000000Z", "payload": payload},
		"meta": map[string]any{"attempt": 1, "delivered_to": "https://handset.example/telnyx/webhook"},
	})
	return b
}

func inboundCall(ccid string) map[string]any {
	return map[string]any{"call_control_id": ccid, "call_leg_id": "leg-" + ccid, "call_session_id": "sess-" + ccid,
		"connection_id": "conn1", "from": "+15550001111", "to": "+15550002222", "direction": "incoming",
		"state": "parked", "client_state": nil, "calling_party_type": "pstn", "offered_codecs": "PCMU,G729"}
}

func TestInboundCallIsAnsweredWithABidirectionalRTPStream(t *testing.T) {
	for _, codec := range []struct {
		codec Codec
		rate  float64
	}{{CodecPCMU, 8000}, {CodecPCMA, 8000}, {CodecL16, 16000}} {
		t.Run(string(codec.codec), func(t *testing.T) {
			r := newRig(t, func(o *Options) { o.Codec = codec.codec })
			if w := r.post(eventBody("e1", EventCallInitiated, inboundCall("v3:call1"))); w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			cmds := r.sent()
			if len(cmds) != 1 || cmds[0].action != "answer" || cmds[0].ccid != "v3:call1" {
				t.Fatalf("commands = %+v", cmds)
			}
			b := cmds[0].body
			want := map[string]any{
				"command_id": "answer:v3:call1", "stream_track": "inbound_track",
				"stream_codec": string(codec.codec), "stream_bidirectional_codec": string(codec.codec),
				"stream_bidirectional_mode": "rtp", "stream_bidirectional_sampling_rate": codec.rate,
			}
			for k, v := range want {
				if b[k] != v {
					t.Errorf("%s = %v, want %v", k, b[k], v)
				}
			}
			u, err := url.Parse(b["stream_url"].(string))
			if err != nil || u.Scheme != "wss" || u.Host != "handset.example" || u.Path != StreamPath {
				t.Fatalf("stream_url = %v (%v)", b["stream_url"], err)
			}
			token := u.Query().Get(TokenParameter)
			if token == "" || b["stream_auth_token"] != token {
				t.Errorf("token in the URL %q, stream_auth_token %v", token, b["stream_auth_token"])
			}
			claims, err := mediastream.NewTokens(testAPIKey, Name, mediastream.EncodingJSON).Verify(token, "v3:call1", r.now)
			if err != nil || claims.From != "+15550001111" || claims.To != "+15550002222" || claims.Direction != string(voice.Inbound) {
				t.Errorf("token claims %+v, %v", claims, err)
			}
		})
	}
}

// TestSignatureIsOverTheRawBody: only Telnyx's Ed25519 signature of the exact bytes, at a
// timestamp within five minutes either way, is accepted.
func TestSignatureIsOverTheRawBody(t *testing.T) {
	body := eventBody("e1", EventCallInitiated, inboundCall("v3:call1"))
	var generic any
	_ = json.Unmarshal(body, &generic)
	reserialised, _ := json.MarshalIndent(generic, "", " ")
	_, otherKey := newKey(t)
	now := time.Unix(1_800_000_000, 0)
	ts := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	cases := []struct {
		name string
		send func(r *rig) *httptest.ResponseRecorder
	}{
		{"unsigned", func(r *rig) *httptest.ResponseRecorder { return r.postSigned(body, "", nil, "") }},
		{"wrong key", func(r *rig) *httptest.ResponseRecorder { return r.postSigned(body, ts(0), otherKey, "") }},
		{"stale", func(r *rig) *httptest.ResponseRecorder { return r.postSigned(body, ts(-301*time.Second), nil, "") }},
		{"future", func(r *rig) *httptest.ResponseRecorder { return r.postSigned(body, ts(301*time.Second), nil, "") }},
		{"non-numeric timestamp", func(r *rig) *httptest.ResponseRecorder { return r.postSigned(body, "now", nil, "") }},
		{"re-serialised body", func(r *rig) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "https://handset.example"+WebhookPath, bytes.NewReader(reserialised))
			req.Header.Set(TimestampHeader, ts(0))
			req.Header.Set(SignatureHeader, signed(t, r.priv, ts(0), body))
			w := httptest.NewRecorder()
			r.mux.ServeHTTP(w, req)
			return w
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil)
			if w := c.send(r); w.Code != http.StatusForbidden {
				t.Fatalf("status %d, want 403", w.Code)
			}
			if cmds := r.sent(); len(cmds) != 0 {
				t.Errorf("a refused webhook sent %+v", cmds)
			}
		})
	}
	t.Run("no public key", func(t *testing.T) {
		r := newRig(t, func(o *Options) { o.PublicKey = nil })
		if w := r.post(body); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "TELNYX_PUBLIC_KEY") {
			t.Fatalf("status %d %q, want 503 naming TELNYX_PUBLIC_KEY", w.Code, w.Body)
		}
	})
}

func TestDrainingRefusesNewCallsBeforeAnything(t *testing.T) {
	r := newRig(t, nil)
	r.draining = true
	body := eventBody("e1", EventCallInitiated, inboundCall("v3:call1"))
	if w := r.post(body); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", w.Code)
	}
	if len(r.sent()) != 0 {
		t.Fatalf("a draining node sent %+v", r.sent())
	}
	// Nothing was remembered: the retry another node (or this one, later) gets answers.
	r.draining = false
	if w := r.post(body); w.Code != http.StatusOK || len(r.sent()) != 1 {
		t.Fatalf("after draining: status %d, commands %+v", w.Code, r.sent())
	}
}

// TestAnswerFailureIsRetriedWithTheSameCommandID: a failed answer makes the webhook fail, so
// Telnyx sends the event again; the retry repeats the same command (same command_id, same
// token), and one answered call results.
func TestAnswerFailureIsRetriedWithTheSameCommandID(t *testing.T) {
	r := newRig(t, nil)
	var tries []sentCommand
	r.onSend = func(c sentCommand) { tries = append(tries, c) }
	r.fail = func(string) error { return carrier.Classify(carrier.ErrUnreachable, errors.New("telnyx is down")) }
	body := eventBody("e1", EventCallInitiated, inboundCall("v3:call1"))
	if w := r.post(body); w.Code < 500 {
		t.Fatalf("status %d, want 5xx so Telnyx retries", w.Code)
	}
	r.fail = nil
	if w := r.post(body); w.Code != http.StatusOK {
		t.Fatalf("retry: status %d", w.Code)
	}
	if len(tries) != 2 || !bytes.Equal(tries[0].raw, tries[1].raw) {
		t.Fatalf("the retry's command differs from the first:\n%s\n%s", tries[0].raw, tries[len(tries)-1].raw)
	}
	if got := tries[1].body["command_id"]; got != "answer:v3:call1" {
		t.Errorf("command_id %v", got)
	}
}

// TestRepeatedEventAfterTheStreamOpenedSendsNothing: once the call's stream is open, a
// repeat of its first event (a replay within the signature's tolerance) is refused with
// 409, as Twilio's is, and changes nothing.
func TestRepeatedEventAfterTheStreamOpenedSendsNothing(t *testing.T) {
	r := newRig(t, nil)
	body := eventBody("e1", EventCallInitiated, inboundCall("v3:call1"))
	if w := r.post(body); w.Code != http.StatusOK {
		t.Fatal(w.Code)
	}
	if err := r.memory.Streamed(context.Background(), "v3:call1", r.now); err != nil {
		t.Fatal(err)
	}
	if w := r.post(body); w.Code != http.StatusConflict {
		t.Fatalf("repeat: status %d, want 409", w.Code)
	}
	if n := len(r.sent()); n != 1 {
		t.Fatalf("%d commands, want the one answer", n)
	}
}

func TestMemoryFailureRefusesTheCall(t *testing.T) {
	r := newRig(t, nil)
	r.memory.Fail(errors.New("store down"))
	if w := r.post(eventBody("e1", EventCallInitiated, inboundCall("v3:call1"))); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", w.Code)
	}
	if len(r.sent()) != 0 {
		t.Fatal("answered without a memory")
	}
}

func TestMalformedEvents(t *testing.T) {
	r := newRig(t, nil)
	for _, body := range []string{`not json`, `{"data":{"payload":"x"}}`} {
		if w := r.post([]byte(body)); w.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", body, w.Code)
		}
	}
	if w := r.post(eventBody("e1", "call.recording.saved", map[string]any{})); w.Code != http.StatusOK {
		t.Errorf("an event without a call: status %d, want 200", w.Code)
	}
	big := eventBody("e1", EventCallInitiated, map[string]any{"call_control_id": "v3:x", "pad": strings.Repeat("a", maxWebhookBody)})
	if w := r.post(big); w.Code != http.StatusBadRequest {
		t.Errorf("an oversized body: status %d, want 400", w.Code)
	}
	if len(r.sent()) != 0 {
		t.Errorf("sent %+v", r.sent())
	}
}

// outboundCall is an outbound call's payload with Handset's client state.
func outboundCall(t *testing.T, ccid string, id voice.CallID, policy carrier.MachinePolicy, extra map[string]any) map[string]any {
	t.Helper()
	cs, err := EncodeClientState(ClientState{CallID: id, Machine: policy})
	if err != nil {
		t.Fatal(err)
	}
	p := map[string]any{"call_control_id": ccid, "call_leg_id": "leg", "call_session_id": "sess", "connection_id": "conn1",
		"from": "+15550002222", "to": "+15550003333", "direction": "outgoing", "client_state": cs}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func TestOutboundStreamStartsWhenAnswered(t *testing.T) {
	r := newRig(t, nil)
	r.post(eventBody("e1", EventCallInitiated, outboundCall(t, "v3:out1", "call-1", carrier.MachineTalk, nil)))
	if len(r.sent()) != 0 {
		t.Fatalf("commands before the answer: %+v", r.sent())
	}
	if w := r.post(eventBody("e2", EventCallAnswered, outboundCall(t, "v3:out1", "call-1", carrier.MachineTalk, nil))); w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	cmds := r.sent()
	if len(cmds) != 1 || cmds[0].action != "streaming_start" || cmds[0].body["stream_bidirectional_mode"] != "rtp" ||
		cmds[0].body["stream_codec"] != cmds[0].body["stream_bidirectional_codec"] {
		t.Fatalf("commands %+v", cmds)
	}
	u, _ := url.Parse(cmds[0].body["stream_url"].(string))
	claims, err := mediastream.NewTokens(testAPIKey, Name, mediastream.EncodingJSON).Verify(u.Query().Get(TokenParameter), "v3:out1", r.now)
	if err != nil || claims.CallID != "call-1" || claims.Direction != string(voice.Outbound) {
		t.Fatalf("claims %+v %v", claims, err)
	}
	p, ok, _ := r.memory.Progress(context.Background(), "v3:out1")
	if !ok || p.Status != carrier.StatusInProgress || p.CallID != "call-1" {
		t.Errorf("ledger %+v %v", p, ok)
	}
}

// TestOutboundDataIsInClientState: a query on the webhook URL is not signed, so it
// cannot change the call; only client_state (in the signed body) counts.
func TestOutboundDataIsInClientState(t *testing.T) {
	r := newRig(t, nil)
	body := eventBody("e2", EventCallAnswered, outboundCall(t, "v3:out1", "call-1", carrier.MachineTalk, nil))
	w := r.postSigned(body, strconv.FormatInt(r.now.Unix(), 10), nil, WebhookPath+"?handset_call=forged&handset_machine=hangup")
	if w.Code != http.StatusOK {
		t.Fatal(w.Code)
	}
	cmds := r.sent()
	if len(cmds) != 1 || cmds[0].action != "streaming_start" {
		t.Fatalf("commands %+v", cmds)
	}
	u, _ := url.Parse(cmds[0].body["stream_url"].(string))
	claims, _ := mediastream.NewTokens(testAPIKey, Name, mediastream.EncodingJSON).Verify(u.Query().Get(TokenParameter), "v3:out1", r.now)
	if claims.CallID != "call-1" {
		t.Errorf("call id %q, want call-1", claims.CallID)
	}
}

// TestMachineHangupBeforeMedia: with detection, nothing streams before the verdict; a
// machine under MachineHangup is hung up on and reported declined.
func TestMachineHangupBeforeMedia(t *testing.T) {
	r := newRig(t, nil)
	r.post(eventBody("e2", EventCallAnswered, outboundCall(t, "v3:out1", "call-1", carrier.MachineHangup, nil)))
	if len(r.sent()) != 0 {
		t.Fatalf("commands before the verdict: %+v", r.sent())
	}
	r.post(eventBody("e3", EventMachineDetectionEnded, outboundCall(t, "v3:out1", "call-1", carrier.MachineHangup, map[string]any{"result": "machine"})))
	cmds := r.sent()
	if len(cmds) != 1 || cmds[0].action != "hangup" {
		t.Fatalf("commands %+v", cmds)
	}
	var declined bool
	for _, p := range r.progressed() {
		declined = declined || p.Declined && p.CallID == "call-1" && p.AnsweredBy == carrier.AnsweredMachine
	}
	if !declined {
		t.Errorf("no declined progress: %+v", r.progressed())
	}
	// The hangup of a call that already ended counts as done.
	r2 := newRig(t, nil)
	r2.fail = func(string) error { return &RESTError{Status: 422, Code: CodeCallEnded} }
	if w := r2.post(eventBody("e3", EventMachineDetectionEnded, outboundCall(t, "v3:out2", "call-2", carrier.MachineHangup, map[string]any{"result": "machine"}))); w.Code != http.StatusOK {
		t.Errorf("hangup of an ended call: status %d", w.Code)
	}
}

// TestMachineMessageAfterBeep: MachineMessage waits for the greeting's end, then streams.
func TestMachineMessageAfterBeep(t *testing.T) {
	r := newRig(t, nil)
	pl := func(extra map[string]any) map[string]any {
		return outboundCall(t, "v3:out1", "call-1", carrier.MachineMessage, extra)
	}
	r.post(eventBody("e2", EventCallAnswered, pl(nil)))
	r.post(eventBody("e3", EventMachineDetectionEnded, pl(map[string]any{"result": "machine"})))
	if len(r.sent()) != 0 {
		t.Fatalf("commands before the beep: %+v", r.sent())
	}
	r.post(eventBody("e4", EventMachineGreetingEnded, pl(map[string]any{"result": "beep_detected"})))
	cmds := r.sent()
	if len(cmds) != 1 || cmds[0].action != "streaming_start" {
		t.Fatalf("commands %+v", cmds)
	}
	u, _ := url.Parse(cmds[0].body["stream_url"].(string))
	claims, _ := mediastream.NewTokens(testAPIKey, Name, mediastream.EncodingJSON).Verify(u.Query().Get(TokenParameter), "v3:out1", r.now)
	if claims.AnsweredBy != string(carrier.AnsweredBeep) {
		t.Errorf("answered by %q", claims.AnsweredBy)
	}
	// A person under the same policy is talked to at once.
	r2 := newRig(t, nil)
	r2.post(eventBody("e3", EventMachineDetectionEnded, outboundCall(t, "v3:out2", "call-2", carrier.MachineMessage, map[string]any{"result": "human"})))
	if cmds := r2.sent(); len(cmds) != 1 || cmds[0].action != "streaming_start" {
		t.Fatalf("a person: commands %+v", cmds)
	}
}

func TestHangupEventsFillTheLedger(t *testing.T) {
	cases := []struct {
		name     string
		answered bool
		cause    string
		want     carrier.Status
	}{
		{"busy", false, "user_busy", carrier.StatusBusy},
		{"no answer", false, "timeout", carrier.StatusNoAnswer},
		{"completed", true, "normal_clearing", carrier.StatusCompleted},
		{"canceled", false, "normal_clearing", carrier.StatusCanceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil)
			r.post(eventBody("e1", EventCallInitiated, outboundCall(t, "v3:out1", "call-1", carrier.MachineTalk, nil)))
			if c.answered {
				r.post(eventBody("e2", EventCallAnswered, outboundCall(t, "v3:out1", "call-1", carrier.MachineTalk, nil)))
			}
			hangup := eventBody("e9", EventCallHangup, outboundCall(t, "v3:out1", "call-1", carrier.MachineTalk, map[string]any{
				"hangup_cause": c.cause, "hangup_source": "callee",
				"start_time": "2026-11-29T02:00:00Z", "end_time": "2026-11-29T02:00:42Z"}))
			if w := r.post(hangup); w.Code != http.StatusOK {
				t.Fatalf("status %d", w.Code)
			}
			r.post(hangup) // a retry: noted once
			p, ok, _ := r.memory.Progress(context.Background(), "v3:out1")
			if !ok || p.Status != c.want || p.CallID != "call-1" || p.Duration != 42*time.Second {
				t.Errorf("ledger %+v, want %s", p, c.want)
			}
			var ended int
			for _, p := range r.progressed() {
				if p.Status.Ended() {
					ended++
				}
			}
			if ended != 1 {
				t.Errorf("OnProgress heard the end %d times: %+v", ended, r.progressed())
			}
		})
	}
}

// TestInboundAttestationReachesTheCall: the STIR/SHAKEN fields of call.initiated ride in
// the stream token to the call's LegInfo.
func TestInboundAttestationReachesTheCall(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		level     string
		validated *bool
		want      voice.Attestation
	}{
		{"A", &yes, voice.AttestationA},
		{"B", nil, voice.AttestationB},
		{"C", &yes, voice.AttestationC},
		{"A", &no, voice.AttestationFailed},
		{"", nil, ""},
		{"Z", nil, voice.AttestationNone},
	}
	for _, c := range cases {
		r := newRig(t, nil)
		call := inboundCall("v3:call1")
		if c.level != "" {
			call["shaken_stir_attestation"] = c.level
		}
		if c.validated != nil {
			call["shaken_stir_validated"] = *c.validated
		}
		if w := r.post(eventBody("e1", EventCallInitiated, call)); w.Code != http.StatusOK {
			t.Fatalf("status %d", w.Code)
		}
		u, _ := url.Parse(r.sent()[0].body["stream_url"].(string))
		claims, err := mediastream.NewTokens(testAPIKey, Name, mediastream.EncodingJSON).Verify(u.Query().Get(TokenParameter), "v3:call1", r.now)
		if err != nil || voice.Attestation(claims.Attestation) != c.want {
			t.Errorf("%s/%v: attestation %q (%v), want %q", c.level, c.validated, claims.Attestation, err, c.want)
		}
	}
}
