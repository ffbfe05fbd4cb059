package telnyx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/mediastream"
	"github.com/handset-voice/handset/internal/voice"
)

// maxWebhookBody bounds an event's body: a call event is a few kilobytes.
const maxWebhookBody = 64 << 10

// commandTimeout bounds a command sent while Telnyx waits on its webhook.
const commandTimeout = 8 * time.Second

// webhook receives every Call Control event: it checks the signature over the raw body,
// answers inbound calls, starts the stream of outbound ones once they are answered (and
// judged), and keeps every call's progress in the ledger.
func (c *Carrier) webhook(w http.ResponseWriter, r *http.Request) {
	if len(c.opts.PublicKey) == 0 {
		http.Error(w, "Telnyx is not configured: set TELNYX_PUBLIC_KEY", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		http.Error(w, "body too large or unreadable", http.StatusBadRequest)
		return
	}
	if err := VerifySignature(c.opts.PublicKey, r.Header.Get(TimestampHeader), r.Header.Get(SignatureHeader), body, c.opts.Now()); err != nil {
		c.log.Warn("refused webhook", "err", err,
			"hint", "check TELNYX_PUBLIC_KEY (Mission Control: Keys & Credentials, Public Key) and the clock")
		http.Error(w, "invalid Telnyx signature", http.StatusForbidden)
		return
	}
	var env Envelope
	var p CallPayload
	if err := json.Unmarshal(body, &env); err != nil {
		http.Error(w, "malformed event", http.StatusBadRequest)
		return
	}
	if len(env.Data.Payload) > 0 {
		if err := json.Unmarshal(env.Data.Payload, &p); err != nil {
			http.Error(w, "malformed event payload", http.StatusBadRequest)
			return
		}
	}
	ev := event{id: env.Data.ID, kind: env.Data.EventType, p: p}
	if ev.p.CallControlID == "" || len(ev.p.CallControlID) > maxRef {
		c.log.Debug("ignored event without a call", "event_type", voice.Clip(ev.kind, 60))
		w.WriteHeader(http.StatusOK)
		return
	}
	if ev.kind == EventCallInitiated && ev.p.Direction == "incoming" {
		c.answerInbound(w, r, ev)
		return
	}
	status, err := c.outboundEvent(r, ev)
	if err != nil {
		c.log.Warn("event not handled: Telnyx will send it again", "event_type", ev.kind, "call_control_id", ev.p.CallControlID, "err", err)
		http.Error(w, voice.Clip(err.Error(), 200), status)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// maxRef bounds a call_control_id Handset keeps.
const maxRef = 256

// event is one webhook, decoded.
type event struct {
	id, kind string
	p        CallPayload
}

// answerInbound answers a parked inbound call. The answer (its stream token inside) is
// remembered first, so a stream Telnyx opens before the command returns is known; then
// the answer command goes out with a command id made of the call's id, so a retry from
// any node repeats the same command and Telnyx ignores the repeat.
func (c *Carrier) answerInbound(w http.ResponseWriter, r *http.Request, ev event) {
	ccid := ev.p.CallControlID
	if c.opts.Draining != nil && c.opts.Draining() {
		c.log.Info("inbound call refused while draining", "call_control_id", ccid)
		http.Error(w, "draining: not taking new calls", http.StatusServiceUnavailable)
		return
	}
	if c.tokens == nil {
		http.Error(w, "Telnyx is not configured: set TELNYX_API_KEY", http.StatusServiceUnavailable)
		return
	}
	attest := attestation(ev.p)
	cmd, err := c.streamCommand(r, "answer:"+ccid, mediastream.Claims{
		CallRef: ccid, From: ev.p.From, To: ev.p.To, Direction: string(voice.Inbound), Attestation: string(attest),
	})
	if err != nil {
		http.Error(w, voice.Clip(err.Error(), 200), http.StatusBadRequest)
		return
	}
	sent, err := c.commandOnce(r.Context(), ccid, ev.id, "answer", cmd)
	switch {
	case errors.Is(err, mediastream.ErrMemoryUnavailable):
		http.Error(w, "call memory unavailable", http.StatusServiceUnavailable)
		return
	case err != nil:
		// A 5xx makes Telnyx send the event again: the retry repeats the same command.
		c.log.Warn("answer failed: Telnyx will send the call again", "call_control_id", ccid, "err", err)
		http.Error(w, "answer failed: "+voice.Clip(err.Error(), 200), http.StatusBadGateway)
		return
	}
	if !sent {
		// The call's stream is open: this is a replay (or a retry too late to matter).
		c.log.Warn("refused a repeat of a connected call's first event", "call_control_id", ccid, "event_id", voice.Clip(ev.id, 64))
		http.Error(w, "call already connected", http.StatusConflict)
		return
	}
	c.log.Info("answered call", "call_control_id", ccid, "attestation", attest)
	if err := c.progress(r.Context(), carrier.Progress{Ref: ccid, Status: carrier.StatusInProgress}, false); err != nil {
		c.log.Warn("answered call not kept in the ledger", "call_control_id", ccid, "err", err)
	}
	w.WriteHeader(http.StatusOK)
}

// commandOnce sends cmd as action on call ccid once its stream's answer is remembered,
// unless the stream is open already (sent false): the first time with cmd, on a repeat
// the kept command again (same command id: Telnyx ignores it).
func (c *Carrier) commandOnce(ctx context.Context, ccid, requestKey, action string, cmd []byte) (sent bool, err error) {
	mctx, cancel := context.WithTimeout(ctx, mediastream.MemoryTimeout)
	kept, outcome, err := c.once.RememberOnce(mctx, ccid, requestKey, cmd)
	cancel()
	if err != nil {
		return false, err
	}
	if outcome == mediastream.Connected {
		return false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	if err := c.opts.Command(cctx, ccid, action, json.RawMessage(kept.Body)); err != nil {
		return false, err
	}
	return true, nil
}

// streamCommand is the body of an answer or streaming_start: a bidirectional RTP stream
// in the configured codec both ways, to Handset's stream URL with a fresh one-time token.
func (c *Carrier) streamCommand(r *http.Request, commandID string, claims mediastream.Claims) ([]byte, error) {
	token, err := c.tokens.Mint(claims, c.opts.Now())
	if err != nil {
		return nil, err
	}
	base := mediastream.PublicURL(r, c.opts.PublicURL, c.opts.TrustedProxies, true)
	base = base[:len(base)-len(r.URL.RequestURI())]
	format, _ := c.codec.Format()
	return json.Marshal(streamCommand{
		CommandID:                       commandID,
		StreamURL:                       base + StreamPath + "?" + TokenParameter + "=" + url.QueryEscape(token),
		StreamTrack:                     "inbound_track",
		StreamCodec:                     string(c.codec),
		StreamBidirectionalMode:         "rtp",
		StreamBidirectionalCodec:        string(c.codec),
		StreamBidirectionalSamplingRate: format.Rate,
		StreamAuthToken:                 token,
	})
}

// streamCommand is what answer and streaming_start carry to open the media stream.
// stream_bidirectional_mode must be "rtp": the default ("mp3") plays queued files and
// drops raw audio. stream_bidirectional_target_legs is left to Telnyx's default (its
// values are not confirmed).
type streamCommand struct {
	CommandID                       string `json:"command_id"`
	ClientState                     string `json:"client_state,omitempty"`
	StreamURL                       string `json:"stream_url"`
	StreamTrack                     string `json:"stream_track"`
	StreamCodec                     string `json:"stream_codec"`
	StreamBidirectionalMode         string `json:"stream_bidirectional_mode"`
	StreamBidirectionalCodec        string `json:"stream_bidirectional_codec"`
	StreamBidirectionalSamplingRate int    `json:"stream_bidirectional_sampling_rate"`
	StreamAuthToken                 string `json:"stream_auth_token"`
}

// attestation reads an inbound call's STIR/SHAKEN fields (names UNCONFIRMED): a level
// A/B/C that verified, failed when it did not, nothing when absent.
func attestation(p CallPayload) voice.Attestation {
	if p.StirValidated != nil && !*p.StirValidated {
		return voice.AttestationFailed
	}
	switch p.StirAttestation {
	case "":
		return ""
	case "A", "a":
		return voice.AttestationA
	case "B", "b":
		return voice.AttestationB
	case "C", "c":
		return voice.AttestationC
	}
	return voice.AttestationNone
}

// outboundEvent handles every event but an inbound call's first: the progress of calls
// Handset placed (and the hang-up of any call). It returns the HTTP status to answer when
// the event must come again.
func (c *Carrier) outboundEvent(r *http.Request, ev event) (int, error) {
	ctx := r.Context()
	ccid := ev.p.CallControlID
	var state ClientState
	if ev.p.ClientState != "" {
		s, err := DecodeClientState(ev.p.ClientState)
		if err != nil {
			c.log.Warn("event with a client_state Handset did not write", "event_type", ev.kind, "call_control_id", ccid, "err", err)
		} else {
			state = s
		}
	}
	switch ev.kind {
	case EventCallInitiated:
		return c.note(ctx, ev, carrier.Progress{CallID: state.CallID, Ref: ccid, Status: carrier.StatusRinging})
	case EventCallAnswered:
		if status, err := c.note(ctx, ev, carrier.Progress{CallID: state.CallID, Ref: ccid, Status: carrier.StatusInProgress}); err != nil {
			return status, err
		}
		if state.CallID == "" || ev.p.Direction == "incoming" {
			return 0, nil // an inbound call streams from its answer
		}
		if state.Machine == carrier.MachineHangup || state.Machine == carrier.MachineMessage {
			return 0, nil // the stream waits for the verdict
		}
		return c.startStream(r, ev, state, "")
	case EventMachineDetectionEnded, EventMachinePremiumDetectionEnded:
		return c.verdict(r, ev, state, MachineVerdict(ev.kind, ev.p.Result), false)
	case EventMachineGreetingEnded, EventMachinePremiumGreetingEnded:
		return c.verdict(r, ev, state, MachineVerdict(ev.kind, ev.p.Result), true)
	case EventCallHangup:
		return c.hungUp(ctx, ev, state)
	case EventStreamingFailed:
		// A call without its stream is silence on both sides: end it.
		c.log.Warn("media stream failed: hanging up", "call_control_id", ccid)
		if err := c.hangup(ctx, ccid, "stream"); err != nil {
			return http.StatusBadGateway, err
		}
	case EventStreamingStarted, EventStreamingStopped:
		c.log.Debug("media stream event", "event_type", ev.kind, "call_control_id", ccid)
	default:
		c.log.Debug("ignored event", "event_type", voice.Clip(ev.kind, 60), "call_control_id", ccid)
	}
	return 0, nil
}

// verdict acts on a machine detection event for a call Handset placed: a person (or no
// clear answer) is talked to at once; a machine is hung up on (MachineHangup), or waited
// for until its greeting ends (MachineMessage); greetingEnded is the greeting's end.
func (c *Carrier) verdict(r *http.Request, ev event, state ClientState, by carrier.AnsweredBy, greetingEnded bool) (int, error) {
	ccid := ev.p.CallControlID
	if state.CallID == "" {
		return 0, nil // not a call Handset placed
	}
	machine := by.Machine()
	if machine && state.Machine == carrier.MachineHangup {
		if err := c.hangup(r.Context(), ccid, "machine"); err != nil {
			return http.StatusBadGateway, err
		}
		c.log.Info("a machine answered: hanging up", "call_control_id", ccid, "answered_by", by)
		return c.note(r.Context(), ev, carrier.Progress{CallID: state.CallID, Ref: ccid, AnsweredBy: by, Declined: true})
	}
	if status, err := c.note(r.Context(), ev, carrier.Progress{CallID: state.CallID, Ref: ccid, AnsweredBy: by}); err != nil {
		return status, err
	}
	if machine && state.Machine == carrier.MachineMessage && !greetingEnded && by == carrier.AnsweredMachine {
		return 0, nil // the message waits for the beep
	}
	return c.startStream(r, ev, state, by)
}

// startStream asks Telnyx to open the media stream of an answered outbound call.
func (c *Carrier) startStream(r *http.Request, ev event, state ClientState, by carrier.AnsweredBy) (int, error) {
	if c.tokens == nil {
		return http.StatusServiceUnavailable, errors.New("Telnyx is not configured: set TELNYX_API_KEY")
	}
	ccid := ev.p.CallControlID
	cmd, err := c.streamCommand(r, "stream:"+ccid, mediastream.Claims{
		CallRef: ccid, From: ev.p.From, To: ev.p.To, Direction: string(voice.Outbound),
		CallID: string(state.CallID), AnsweredBy: string(by),
	})
	if err != nil {
		return http.StatusBadRequest, err
	}
	if _, err := c.commandOnce(r.Context(), ccid, "stream:"+ccid, "streaming_start", cmd); err != nil {
		if errors.Is(err, mediastream.ErrMemoryUnavailable) {
			return http.StatusServiceUnavailable, err
		}
		return http.StatusBadGateway, err
	}
	return 0, nil
}

// hungUp records how a call ended: the cause, read against whether it was answered.
func (c *Carrier) hungUp(ctx context.Context, ev event, state ClientState) (int, error) {
	mctx, cancel := context.WithTimeout(ctx, mediastream.MemoryTimeout)
	prev, _, err := c.opts.Memory.Progress(mctx, ev.p.CallControlID)
	cancel()
	if err != nil {
		return http.StatusServiceUnavailable, fmt.Errorf("%w: %w", mediastream.ErrMemoryUnavailable, err)
	}
	answered := prev.Status.Rank() >= carrier.RankAnswered
	status := HangupCause(ev.p.HangupCause, answered)
	c.log.Info("call ended", "call_control_id", ev.p.CallControlID, "hangup_cause", voice.Clip(ev.p.HangupCause, 40),
		"hangup_source", voice.Clip(ev.p.HangupSource, 40), "status", status)
	return c.note(ctx, ev, carrier.Progress{CallID: state.CallID, Ref: ev.p.CallControlID, Status: status, Duration: ev.p.Duration()})
}

// note keeps p in the ledger and tells OnProgress, once per event id.
func (c *Carrier) note(ctx context.Context, ev event, p carrier.Progress) (int, error) {
	if ev.id != "" {
		mctx, cancel := context.WithTimeout(ctx, mediastream.MemoryTimeout)
		first, err := c.opts.Memory.Once(mctx, "telnyx:event:"+ev.id+":"+p.Ref, c.opts.Now())
		cancel()
		if err != nil {
			return http.StatusServiceUnavailable, fmt.Errorf("%w: %w", mediastream.ErrMemoryUnavailable, err)
		}
		if !first {
			return 0, nil // a retry of an event already noted
		}
	}
	if err := c.progress(ctx, p, true); err != nil {
		return http.StatusServiceUnavailable, err
	}
	return 0, nil
}

// progress keeps p in the ledger and tells OnProgress (tell: whether OnProgress hears it).
func (c *Carrier) progress(ctx context.Context, p carrier.Progress, tell bool) error {
	mctx, cancel := context.WithTimeout(ctx, mediastream.MemoryTimeout)
	err := c.opts.Memory.Progressed(mctx, p, c.opts.Now())
	cancel()
	if err != nil {
		return fmt.Errorf("%w: %w", mediastream.ErrMemoryUnavailable, err)
	}
	if tell && c.opts.OnProgress != nil {
		c.opts.OnProgress(p)
	}
	return nil
}

// hangup ends call ccid for why (part of the command id, so a retry is the same
// command). A call that has ended already counts as hung up.
func (c *Carrier) hangup(ctx context.Context, ccid, why string) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	err := c.opts.Command(ctx, ccid, "hangup", HangupRequest{CommandID: "hangup:" + ccid + ":" + why})
	if errors.Is(err, ErrCallEnded) || errors.Is(err, carrier.ErrNotFound) {
		return nil
	}
	return err
}
