package twiliokit

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
)

// probeWait is how long a forged stream is given to be closed by Handset.
const probeWait = 5 * time.Second

// Forgeries are Twilio's bad requests: webhooks with a bad X-Twilio-Signature, and
// streams whose upgrade signature or handset_token is wrong.
func (v *vendor) Forgeries(handsetURL string) []simkit.Forgery {
	forged, none := "bm90IGEgc2lnbmF0dXJl", ""
	hook := func(mutate func(o *twiliocaller.Options) *string) func(context.Context) (simkit.Refusal, error) {
		return func(ctx context.Context) (simkit.Refusal, error) {
			// Every parameter fixed, so a signature differs only by what mutate changed.
			o := v.callerOptions(handsetURL, simkit.CallOptions{Ref: twiliocaller.NewSid("CA"), From: twiliocaller.DefaultFrom})
			sig := mutate(&o)
			resp, err := twiliocaller.PostWebhook(ctx, o, sig)
			return simkit.Refusal{Status: resp.Status}, err
		}
	}
	stream := func(params func(ctx context.Context, own string) (map[string]string, error), sig *string) func(context.Context) (simkit.Refusal, error) {
		return func(ctx context.Context) (simkit.Refusal, error) {
			return v.probe(ctx, handsetURL, params, sig)
		}
	}
	forbidden := simkit.Refusal{Status: http.StatusForbidden}
	return []simkit.Forgery{
		{Name: "forged signature", Want: forbidden, Send: hook(func(*twiliocaller.Options) *string { return &forged })},
		{Name: "unsigned webhook", Want: forbidden, Send: hook(func(*twiliocaller.Options) *string { return &none })},
		{Name: "signed with the wrong key", Want: forbidden, Send: hook(func(o *twiliocaller.Options) *string {
			o.AuthToken = "not-the-token"
			return nil
		})},
		{Name: "tampered body", Want: forbidden, Send: hook(func(o *twiliocaller.Options) *string {
			tampered := *o
			tampered.From = "+15550100999"
			p := tampered.WebhookParams()
			sig := twiliocaller.Signature(o.AuthToken, o.SignedWebhookURL(), p)
			return &sig
		})},
		{Name: "stream without a token", Want: simkit.Refusal{Status: http.StatusSwitchingProtocols, Reason: "missing stream token"},
			Send: stream(func(context.Context, string) (map[string]string, error) { return map[string]string{}, nil }, nil)},
		{Name: "stream with a forged token", Want: simkit.Refusal{Status: http.StatusSwitchingProtocols, Reason: "forged"},
			Send: stream(func(context.Context, string) (map[string]string, error) {
				return map[string]string{"handset_token": "eyJjIjoiQ0ExIn0.Zm9yZ2Vk"}, nil
			}, nil)},
		{Name: "stream with another call's token", Want: simkit.Refusal{Status: http.StatusSwitchingProtocols, Reason: "another call"},
			Send: stream(func(ctx context.Context, _ string) (map[string]string, error) {
				tw, _, err := v.answer(ctx, handsetURL) // a second call, never streamed
				return tw.Parameters, err
			}, nil)},
		{Name: "stream with a used token", Want: simkit.Refusal{Status: http.StatusSwitchingProtocols, Reason: "already used"},
			Send: func(ctx context.Context) (simkit.Refusal, error) { return v.reuseToken(ctx, handsetURL) }},
		{Name: "unsigned stream upgrade", Want: forbidden,
			Send: stream(func(context.Context, string) (map[string]string, error) { return map[string]string{}, nil }, &none)},
		{Name: "forged stream upgrade signature", Want: forbidden,
			Send: stream(func(context.Context, string) (map[string]string, error) { return map[string]string{}, nil }, &forged)},
	}
}

// answer posts a signed voice webhook and returns the TwiML's stream and the options used.
func (v *vendor) answer(ctx context.Context, handsetURL string) (twiliocaller.StreamTwiML, twiliocaller.Options, error) {
	o := v.callerOptions(handsetURL, simkit.CallOptions{Ref: twiliocaller.NewSid("CA")})
	resp, err := twiliocaller.PostWebhook(ctx, o, nil)
	if err != nil {
		return twiliocaller.StreamTwiML{}, o, err
	}
	if resp.Status != http.StatusOK {
		return twiliocaller.StreamTwiML{}, o, &twiliocaller.WebhookError{Status: resp.Status, Body: string(resp.Body)}
	}
	tw, err := twiliocaller.ParseTwiML(resp.Body)
	return tw, o, err
}

// probe opens a stream for a fresh call, signed over its TwiML URL (or with sig), with
// the start parameters params gives, and reports how Handset refused it.
func (v *vendor) probe(ctx context.Context, handsetURL string, params func(ctx context.Context, own string) (map[string]string, error), sig *string) (simkit.Refusal, error) {
	tw, o, err := v.answer(ctx, handsetURL)
	if err != nil {
		return simkit.Refusal{}, err
	}
	p, err := params(ctx, tw.Parameters["handset_token"])
	if err != nil {
		return simkit.Refusal{}, err
	}
	return v.dialProbe(ctx, o, tw, p, sig)
}

func (v *vendor) dialProbe(ctx context.Context, o twiliocaller.Options, tw twiliocaller.StreamTwiML, params map[string]string, sig *string) (simkit.Refusal, error) {
	dial, err := o.StreamDialURL(tw.URL)
	if err != nil {
		return simkit.Refusal{}, err
	}
	res, err := twiliocaller.DialStream(ctx, twiliocaller.StreamProbe{
		URL: dial, SignURL: tw.URL, AuthToken: v.opts.Secret, Signature: sig,
		AccountSid: o.AccountSid, CallSid: o.CallSid, Parameters: params, Wait: probeWait, HTTPClient: o.HTTPClient,
	})
	if err != nil {
		return simkit.Refusal{}, err
	}
	return simkit.Refusal{Status: res.Status, Reason: res.Reason}, nil
}

// reuseToken places a real call and, once its stream carries audio (the token redeemed),
// opens a second stream with the same token.
func (v *vendor) reuseToken(ctx context.Context, handsetURL string) (simkit.Refusal, error) {
	tw, o, err := v.answer(ctx, handsetURL)
	if err != nil {
		return simkit.Refusal{}, err
	}
	c, err := twiliocaller.Connect(ctx, o, tw)
	if err != nil {
		return simkit.Refusal{}, err
	}
	defer func() { _ = c.Hangup() }()
	if err := c.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Counters.ReceivedFrames > 0 || s.Count(phone.MarkSent) > 0 }); err != nil {
		return simkit.Refusal{}, fmt.Errorf("twiliokit: the real call's stream never started: %w", err)
	}
	return v.dialProbe(ctx, o, tw, tw.Parameters, nil)
}

// Replay places a call, waits for Handset's first audio (its greeting), hangs up, then
// posts the call's voice webhook again (correctly signed, as recorded): Handset must
// answer 409, since the call's stream has opened.
func (v *vendor) Replay(ctx context.Context, handsetURL string) error {
	o := v.callerOptions(handsetURL, simkit.CallOptions{Ref: twiliocaller.NewSid("CA")})
	c, err := twiliocaller.Dial(ctx, o)
	if err != nil {
		return err
	}
	err = c.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Counters.ReceivedFrames > 0 || s.Count(phone.MarkSent) > 0 })
	_ = c.Hangup()
	if err != nil {
		return fmt.Errorf("twiliokit: the call to replay never heard Handset: %w", err)
	}
	resp, err := twiliocaller.PostWebhook(ctx, o, nil)
	if err != nil {
		return err
	}
	if resp.Status != http.StatusConflict {
		return fmt.Errorf("twiliokit: the replayed webhook got %d %q, want 409", resp.Status, resp.Body)
	}
	return nil
}
