package plivosim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

// probeWait is how long a forged stream is given to be closed by Handset.
const probeWait = 5 * time.Second

// Forgeries are Plivo's bad requests: answer requests unsigned, signed with the wrong
// token or with a tampered form, a transfer fetch whose nonce was used before, and
// streams whose start carries no token, a forged one, another call's or a used one.
// Plivo's token rides in start, so a bad stream is upgraded and then closed with the
// reason.
func (v *vendor) Forgeries(handsetURL string) []simkit.Forgery {
	handsetURL = strings.TrimRight(handsetURL, "/")
	forbidden := simkit.Refusal{Status: http.StatusForbidden}
	closed := func(reason string) simkit.Refusal {
		return simkit.Refusal{Status: http.StatusSwitchingProtocols, Reason: reason}
	}
	answer := func(sign func(u string, form url.Values) (sent url.Values, nonce, sig string)) func(context.Context) (simkit.Refusal, error) {
		return func(ctx context.Context) (simkit.Refusal, error) {
			u := v.public(handsetURL) + answerPath
			sent, nonce, sig := sign(u, v.answerForm())
			got, err := v.fake.Post(ctx, u, sent, nonce, sig)
			return simkit.Refusal{Status: got.Status}, err
		}
	}
	return []simkit.Forgery{
		{Name: "unsigned answer request", Want: forbidden, Send: answer(func(_ string, f url.Values) (url.Values, string, string) {
			return f, "", ""
		})},
		{Name: "signed with the wrong auth token", Want: forbidden, Send: answer(func(u string, f url.Values) (url.Values, string, string) {
			nonce := newNonce()
			return f, nonce, SignV3(randomAlnum(40), u, f, nonce)
		})},
		{Name: "tampered form", Want: forbidden, Send: answer(func(u string, f url.Values) (url.Values, string, string) {
			nonce := newNonce()
			sig := SignV3(v.opts.Secret, u, f, nonce)
			f.Set("From", "15550100666")
			return f, nonce, sig
		})},
		{Name: "transfer fetch with a used nonce", Want: forbidden, Send: func(ctx context.Context) (simkit.Refusal, error) {
			u := v.public(handsetURL) + "/plivo/transfer?" + url.Values{"to": {"+15550100777"}}.Encode()
			f := url.Values{"CallUUID": {newUUID()}, "CallStatus": {StatusInProgress}, "Event": {"Redirect"}}
			nonce := newNonce()
			sig := SignV3(v.opts.Secret, u, f, nonce)
			first, err := v.fake.Post(ctx, u, f, nonce, sig)
			if err != nil {
				return simkit.Refusal{}, err
			}
			if first.Status != http.StatusOK {
				return simkit.Refusal{}, fmt.Errorf("plivosim: the first, valid transfer fetch got %d, want 200", first.Status)
			}
			again, err := v.fake.Post(ctx, u, f, nonce, sig)
			return simkit.Refusal{Status: again.Status}, err
		}},
		{Name: "stream without a token", Want: closed("missing stream token"), Send: func(ctx context.Context) (simkit.Refusal, error) {
			return v.probe(ctx, wsURL(handsetURL)+"/plivo/stream", newUUID(), "")
		}},
		{Name: "stream with a forged token", Want: closed("forged"), Send: func(ctx context.Context) (simkit.Refusal, error) {
			return v.probe(ctx, wsURL(handsetURL)+"/plivo/stream", newUUID(), "handsettoken="+randomAlnum(120))
		}},
		{Name: "stream with another call's token", Want: closed("another call"), Send: func(ctx context.Context) (simkit.Refusal, error) {
			a, err := v.parkedCall(ctx, handsetURL)
			if err != nil {
				return simkit.Refusal{}, err
			}
			defer func() { _ = v.fake.Hangup(a.CallUUID, "Caller") }()
			b, err := v.parkedCall(ctx, handsetURL)
			if err != nil {
				return simkit.Refusal{}, err
			}
			defer func() { _ = v.fake.Hangup(b.CallUUID, "Caller") }()
			return v.probe(ctx, v.dialURL(wsURL(a.URL)), b.CallUUID, a.ExtraHeaders)
		}},
		{Name: "stream with a used token", Want: closed("already used"), Send: func(ctx context.Context) (simkit.Refusal, error) {
			return v.reuseToken(ctx, handsetURL)
		}},
	}
}

// public is Handset's public URL as the fake signs it: the one Settings was given, else
// handsetURL.
func (v *vendor) public(handsetURL string) string {
	if err := v.reach(context.Background(), handsetURL, ""); err != nil {
		return handsetURL
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.publicURL
}

// answerForm is an inbound call's answer request, as Plivo sends it.
func (v *vendor) answerForm() url.Values {
	return url.Values{"CallUUID": {newUUID()}, "From": {plain(forgerNumber)}, "To": {plain(v.opts.Numbers[0])},
		"Direction": {"inbound"}, "CallStatus": {StatusRinging}, "Event": {"StartApp"}}
}

// parkedCall rings Handset from the forger's number, whose stream the caller does not
// open, and returns the <Stream> Handset answered with.
func (v *vendor) parkedCall(ctx context.Context, handsetURL string) (StreamOrder, error) {
	if err := v.reach(ctx, handsetURL, ""); err != nil {
		return StreamOrder{}, err
	}
	v.caller.Park(forgerNumber)
	call, err := v.fake.Ring(ctx, forgerNumber, v.opts.Numbers[0])
	if err != nil {
		return StreamOrder{}, err
	}
	return v.caller.Parked(ctx, call.CallUUID)
}

// reuseToken places a real call and, once its stream carries audio (the token redeemed),
// opens a second stream with the same start.
func (v *vendor) reuseToken(ctx context.Context, handsetURL string) (simkit.Refusal, error) {
	p, err := v.Call(ctx, handsetURL, simkit.CallOptions{})
	if err != nil {
		return simkit.Refusal{}, err
	}
	defer func() { _ = p.Hangup() }()
	if err := heard(ctx, p); err != nil {
		return simkit.Refusal{}, err
	}
	call, ok := v.fake.Call(p.Ref())
	if !ok || len(call.Streams) == 0 {
		return simkit.Refusal{}, errors.New("plivosim: the real call has no stream order")
	}
	o := call.Streams[0]
	return v.probe(ctx, v.dialURL(o.URL), p.Ref(), o.ExtraHeaders)
}

// heard waits until Handset's audio or first checkpoint reached phone p.
func heard(ctx context.Context, p phone.Phone) error {
	err := p.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Counters.ReceivedFrames > 0 || s.Count(phone.MarkSent) > 0 })
	if err != nil {
		return fmt.Errorf("plivosim: the call never heard Handset: %w", err)
	}
	return nil
}

// probe opens a stream at u, sends start for call callUUID with extraHeaders, and reports
// how Handset refused it: the HTTP status of a refused upgrade, or 101 and the close
// reason.
func (v *vendor) probe(ctx context.Context, u, callUUID, extraHeaders string) (simkit.Refusal, error) {
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
	start, _ := json.Marshal(map[string]any{"event": "start", "sequenceNumber": 1,
		"start": map[string]any{"callId": callUUID, "streamId": newUUID(), "accountId": DefaultAuthID, "tracks": []string{"inbound"},
			"mediaFormat": map[string]any{"encoding": "audio/x-mulaw", "sampleRate": 8000}},
		"extra_headers": extraHeaders})
	_ = conn.Write(ctx, websocket.MessageText, start) // refused already: the read says how
	for {
		if _, _, err := conn.Read(ctx); err != nil {
			if ce := new(websocket.CloseError); errors.As(err, ce) {
				return simkit.Refusal{Status: http.StatusSwitchingProtocols, Reason: ce.Reason}, nil
			}
			return simkit.Refusal{Status: http.StatusSwitchingProtocols}, fmt.Errorf("plivosim: the forged stream was not closed: %w", err)
		}
	}
}

// Replay places a call, waits for Handset's first audio, hangs up, then sends the call's
// answer request again exactly as Plivo signed it (same nonce), as an attacker who
// recorded it would. V3 has no timestamp, so only Handset's memory tells: it must refuse
// (409: the call's stream has opened; 403: the nonce was used). Nil when it did.
func (v *vendor) Replay(ctx context.Context, handsetURL string) error {
	p, err := v.Call(ctx, handsetURL, simkit.CallOptions{})
	if err != nil {
		return err
	}
	err = heard(ctx, p)
	_ = p.Hangup()
	if err != nil {
		return err
	}
	call, ok := v.fake.Call(p.Ref())
	if !ok {
		return errors.New("plivosim: the replayed call is not recorded")
	}
	var first *Callback
	for i, cb := range call.Callbacks {
		if cb.Kind == "answer" {
			first = &call.Callbacks[i]
			break
		}
	}
	if first == nil {
		return errors.New("plivosim: the replayed call's answer request was not recorded")
	}
	got, err := v.fake.Post(ctx, first.URL, first.Params, first.Nonce, first.Signature)
	if err != nil {
		return err
	}
	if got.Status != http.StatusConflict && got.Status != http.StatusForbidden {
		return fmt.Errorf("plivosim: the replayed answer request got %d, want 409 or 403; body %q", got.Status, got.Body)
	}
	return nil
}
