package telnyxsim

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

// probeWait is how long a forged stream is given to be closed by Handset.
const probeWait = 5 * time.Second

// Forgeries are Telnyx's bad requests: webhooks whose Ed25519 signature or timestamp is
// wrong, and streams whose token is missing, forged, another call's or used.
func (v *vendor) Forgeries(handsetURL string) []simkit.Forgery {
	handsetURL = trimSlash(handsetURL)
	forbidden := simkit.Refusal{Status: http.StatusForbidden}
	hook := func(sign func(body []byte) (sent []byte, ts, sig string)) func(context.Context) (simkit.Refusal, error) {
		return func(ctx context.Context) (simkit.Refusal, error) {
			sent, ts, sig := sign(initiatedBody("v3:forged-" + randomHex(8)))
			status, err := v.post(ctx, handsetURL, sent, ts, sig)
			return simkit.Refusal{Status: status}, err
		}
	}
	now := func() time.Time { return v.now() }
	closed := func(reason string) simkit.Refusal {
		return simkit.Refusal{Status: http.StatusSwitchingProtocols, Reason: reason}
	}
	return []simkit.Forgery{
		{Name: "unsigned webhook", Want: forbidden, Send: hook(func(b []byte) ([]byte, string, string) { return b, "", "" })},
		{Name: "signed with the wrong key", Want: forbidden, Send: hook(func(b []byte) ([]byte, string, string) {
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			ts := strconv.FormatInt(now().Unix(), 10)
			return b, ts, base64.StdEncoding.EncodeToString(ed25519.Sign(other, append([]byte(ts+"|"), b...)))
		})},
		{Name: "re-serialised body", Want: forbidden, Send: hook(func(b []byte) ([]byte, string, string) {
			ts, sig := v.fake.Sign(b, now())
			var generic any
			_ = json.Unmarshal(b, &generic)
			spaced, _ := json.MarshalIndent(generic, "", "  ")
			return spaced, ts, sig
		})},
		{Name: "stale timestamp", Want: forbidden, Send: hook(func(b []byte) ([]byte, string, string) {
			ts, sig := v.fake.Sign(b, now().Add(-301*time.Second))
			return b, ts, sig
		})},
		{Name: "future timestamp", Want: forbidden, Send: hook(func(b []byte) ([]byte, string, string) {
			ts, sig := v.fake.Sign(b, now().Add(301*time.Second))
			return b, ts, sig
		})},
		{Name: "stream without a token", Want: forbidden, Send: func(ctx context.Context) (simkit.Refusal, error) {
			return v.probe(ctx, wsURL(handsetURL)+"/telnyx/stream", "v3:forged")
		}},
		{Name: "stream with a forged token", Want: closed("forged"), Send: func(ctx context.Context) (simkit.Refusal, error) {
			return v.probe(ctx, wsURL(handsetURL)+"/telnyx/stream?handset_token="+url.QueryEscape("eyJjIjoidjM6eCJ9.Zm9yZ2Vk"), "v3:x")
		}},
		{Name: "stream with another call's token", Want: closed("another call"), Send: func(ctx context.Context) (simkit.Refusal, error) {
			a, err := v.parkedCall(ctx, handsetURL)
			if err != nil {
				return simkit.Refusal{}, err
			}
			b, err := v.parkedCall(ctx, handsetURL)
			if err != nil {
				return simkit.Refusal{}, err
			}
			defer v.fake.Hangup(a.CallControlID, "caller")
			defer v.fake.Hangup(b.CallControlID, "caller")
			return v.probe(ctx, v.dialURL(a.StreamURL), b.CallControlID)
		}},
		{Name: "stream with a used token", Want: closed("already used"), Send: func(ctx context.Context) (simkit.Refusal, error) {
			return v.reuseToken(ctx, handsetURL)
		}},
	}
}

// parkedCall rings Handset from the forger's number, whose stream the caller does not
// open, and returns the stream order Handset's answer gave.
func (v *vendor) parkedCall(ctx context.Context, handsetURL string) (StreamOrder, error) {
	if err := v.reach(ctx, handsetURL, ""); err != nil {
		return StreamOrder{}, err
	}
	v.caller.Park(forgerNumber)
	call, err := v.fake.Ring(ctx, forgerNumber, v.opts.Numbers[0], RingOptions{})
	if err != nil {
		return StreamOrder{}, err
	}
	return v.caller.Parked(ctx, call.CallControlID)
}

// reuseToken places a real call and, once its stream carries audio (the token redeemed),
// opens a second stream with the same URL.
func (v *vendor) reuseToken(ctx context.Context, handsetURL string) (simkit.Refusal, error) {
	p, err := v.Call(ctx, handsetURL, simkit.CallOptions{})
	if err != nil {
		return simkit.Refusal{}, err
	}
	defer func() { _ = p.Hangup() }()
	if err := p.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Counters.ReceivedFrames > 0 || s.Count(phone.MarkSent) > 0 }); err != nil {
		return simkit.Refusal{}, fmt.Errorf("telnyxsim: the real call's stream never started: %w", err)
	}
	call, ok := v.fake.Call(p.Ref())
	if !ok || len(call.Streams) == 0 {
		return simkit.Refusal{}, errors.New("telnyxsim: the real call has no stream order")
	}
	return v.probe(ctx, v.dialURL(call.Streams[0].StreamURL), p.Ref())
}

// probe opens a stream at u, says connected and start for call ccid, and reports how
// Handset refused it: the HTTP status of a refused upgrade, or 101 and the close reason.
func (v *vendor) probe(ctx context.Context, u, ccid string) (simkit.Refusal, error) {
	ctx, cancel := context.WithTimeout(ctx, probeWait)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: v.opts.HTTPClient})
	if err != nil {
		if resp != nil {
			return simkit.Refusal{Status: resp.StatusCode}, nil
		}
		return simkit.Refusal{}, err
	}
	defer conn.CloseNow()
	start, _ := json.Marshal(map[string]any{"event": "start", "sequence_number": "1", "stream_id": randomUUID(),
		"start": map[string]any{"call_control_id": ccid, "from": forgerNumber, "to": v.opts.Numbers[0],
			"media_format": map[string]any{"encoding": "PCMU", "sample_rate": 8000, "channels": 1}}})
	for _, m := range [][]byte{[]byte(`{"event":"connected","version":"1.0.0"}`), start} {
		if err := conn.Write(ctx, websocket.MessageText, m); err != nil {
			break // refused already: the read below says how
		}
	}
	for {
		if _, _, err := conn.Read(ctx); err != nil {
			if ce := new(websocket.CloseError); errors.As(err, ce) {
				return simkit.Refusal{Status: http.StatusSwitchingProtocols, Reason: ce.Reason}, nil
			}
			return simkit.Refusal{Status: http.StatusSwitchingProtocols}, fmt.Errorf("telnyxsim: the forged stream was not closed: %w", err)
		}
	}
}

// Replay places a call, waits for Handset's first audio, hangs up, then posts the call's
// call.initiated again, correctly signed, as an attacker who recorded it would within the
// signature's five minutes. Handset must refuse it (409) or acknowledge it without
// answering the call again: nil when it did.
func (v *vendor) Replay(ctx context.Context, handsetURL string) error {
	p, err := v.Call(ctx, handsetURL, simkit.CallOptions{})
	if err != nil {
		return err
	}
	err = p.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Counters.ReceivedFrames > 0 || s.Count(phone.MarkSent) > 0 })
	_ = p.Hangup()
	if err != nil {
		return fmt.Errorf("telnyxsim: the call to replay never heard Handset: %w", err)
	}
	// The delivery is recorded once Handset answered it: wait for the call to say so.
	if _, err := v.fake.WaitCall(ctx, p.Ref(), func(c Call) bool { return slices.Contains(c.Events, "call.initiated") }); err != nil {
		return err
	}
	var body []byte
	for _, w := range v.fake.Webhooks() {
		if w.EventType == "call.initiated" && bytes.Contains(w.Body, []byte(strconv.Quote(p.Ref()))) {
			body = w.Body
			break
		}
	}
	if body == nil {
		return errors.New("telnyxsim: the replayed call's call.initiated was not recorded")
	}
	ts, sig := v.fake.Sign(body, v.now())
	status, err := v.post(ctx, trimSlash(handsetURL), body, ts, sig)
	if err != nil {
		return err
	}
	call, _ := v.fake.Call(p.Ref())
	answers := 0
	for _, c := range call.Commands {
		if c == "answer" {
			answers++
		}
	}
	switch {
	case status != http.StatusConflict && (status < 200 || status > 299):
		return fmt.Errorf("telnyxsim: the replayed call.initiated got %d, want 409 or a 2xx that changes nothing", status)
	case answers != 1 || len(call.Streams) != 1:
		return fmt.Errorf("telnyxsim: after the replay the call was answered %d times with %d streams", answers, len(call.Streams))
	}
	return nil
}

// post sends body to Handset's webhook with the signature headers (none when empty).
func (v *vendor) post(ctx context.Context, handsetURL string, body []byte, ts, sig string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, handsetURL+webhookPath, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if ts != "" {
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, sig)
	}
	resp, err := v.opts.HTTPClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// initiatedBody is an inbound call.initiated for ccid, shaped as the fake sends it.
func initiatedBody(ccid string) []byte {
	b, _ := json.Marshal(map[string]any{
		"data": map[string]any{"record_type": "event", "event_type": "call.initiated", "id": randomUUID(),
			"occurred_at": time.Now().UTC().Format(time.RFC3339Nano),
			"payload": map[string]any{"call_control_id": ccid, "call_leg_id": randomUUID(), "call_session_id": randomUUID(),
				"connection_id": "forged", "from": forgerNumber, "to": "+15550100003", "direction": "incoming",
				"state": "parked", "client_state": nil}},
		"meta": map[string]any{"attempt": 1, "delivered_to": "forged"},
	})
	return b
}

func (v *vendor) now() time.Time {
	if v.opts.Clock != nil {
		return v.opts.Clock.Now()
	}
	return time.Now()
}

func trimSlash(u string) string { return strings.TrimRight(u, "/") }

// wsURL is an http(s) URL as ws(s).
func wsURL(u string) string {
	return strings.Replace(strings.Replace(u, "https://", "wss://", 1), "http://", "ws://", 1)
}
