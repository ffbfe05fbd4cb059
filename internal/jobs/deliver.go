package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// A Channel is a way people reach Handset (a carrier, the browser page). Like a Hermes
// platform adapter it declares whether it can deliver later: reach the person again after
// their conversation ended. DeliverLater returns nil when it can, or the reason it cannot.
type Channel interface {
	DeliverLater() error
}

// ChannelFunc adapts a function to Channel.
type ChannelFunc func() error

// DeliverLater calls f.
func (f ChannelFunc) DeliverLater() error { return f() }

// DeliverRequest asks Handset to call someone back and speak a message (POST /api/deliver).
// One of SessionKey, CallerHash or CallID names the person.
type DeliverRequest struct {
	SessionKey string       `json:"session_key,omitempty"`
	CallerHash string       `json:"caller_hash,omitempty"`
	CallID     voice.CallID `json:"call_id,omitempty"` // the person on this earlier call
	Message    string       `json:"message"`
	// IdempotencyKey makes a repeated request (a runtime retrying) queue one delivery.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// Delivery errors: which one decides the API's answer.
var (
	ErrUnknownRecipient = errors.New("no such person") // nobody Handset has talked to
	ErrCannotDeliver    = errors.New("cannot deliver") // known, but no channel can reach them later
)

// PlanDelivery works out how to reach the person req names: their most recent call on a
// channel that can deliver later, called back on the same number through the same carrier
// (the call job falls back to the default carrier when that one has no account).
func PlanDelivery(ctx context.Context, st store.Store, channels map[string]Channel, req DeliverRequest) (CallJob, error) {
	msg := strings.TrimSpace(req.Message)
	switch {
	case msg == "":
		return CallJob{}, fmt.Errorf("%w: message is empty: say what to deliver", ErrBadRequest)
	case len(msg) > messageLimit:
		return CallJob{}, fmt.Errorf("%w: the message is %d characters; at most %d can be spoken", ErrBadRequest, len(msg), messageLimit)
	}
	hash, key, err := recipient(ctx, st, req)
	if err != nil {
		return CallJob{}, err
	}
	calls, err := st.Calls(ctx, store.ListCalls{CallerHash: hash, Limit: 50})
	if err != nil {
		return CallJob{}, err
	}
	var why []string
	for _, c := range calls {
		ch := channels[c.Carrier]
		if ch == nil {
			why = append(why, c.Carrier+": Handset has no such channel now")
			continue
		}
		if err := ch.DeliverLater(); err != nil {
			why = append(why, c.Carrier+": "+err.Error())
			continue
		}
		number, reason := callbackNumber(c)
		if reason != "" {
			why = append(why, reason)
			continue
		}
		return CallJob{To: number, FirstMessage: msg, Deliver: true, SessionKey: key, OnMachine: "message", Carrier: c.Carrier}, nil
	}
	if len(calls) == 0 {
		return CallJob{}, fmt.Errorf("%w: caller %s has no calls on record", ErrUnknownRecipient, voice.Clip(hash, voice.EchoLimit))
	}
	return CallJob{}, fmt.Errorf("%w: caller %s cannot be reached later: %s", ErrCannotDeliver, hash, strings.Join(dedupe(why), "; "))
}

// callbackNumber is the number that reaches the person on call c, or why there is none.
// The reason never quotes the number: it goes back to agent tools.
func callbackNumber(c store.Call) (number, reason string) {
	number = c.From
	if c.Direction == voice.Outbound {
		number = c.To
	}
	if session.Withheld(number) {
		return "", "the caller withheld their number, so there is none to call back"
	}
	n, err := carrier.NormalizeNumber(number)
	if err != nil {
		return "", c.Carrier + ": the caller's address is not a phone number Handset can dial"
	}
	return n, ""
}

// CallKeyPrefix starts the session key a runtime files a call under when the caller has no
// caller hash (OpenClaw: "handset:call:<call id>"); a tool of that session may send it.
const CallKeyPrefix = "handset:call:"

// recipient resolves the request to a caller hash and the session key it belongs to.
func recipient(ctx context.Context, st store.Store, req DeliverRequest) (hash, key string, err error) {
	named := 0
	for _, v := range []string{req.SessionKey, req.CallerHash, string(req.CallID)} {
		if v != "" {
			named++
		}
	}
	if named != 1 {
		return "", "", fmt.Errorf("%w: name the person with exactly one of session_key, caller_hash or call_id", ErrBadRequest)
	}
	if id, ok := strings.CutPrefix(session.StoredKey(req.SessionKey), CallKeyPrefix); ok && id != "" {
		req.CallID, req.SessionKey = voice.CallID(id), ""
	}
	switch {
	case req.SessionKey != "":
		ss, err := st.SessionByKey(ctx, session.StoredKey(req.SessionKey))
		if errors.Is(err, store.ErrNotFound) {
			return "", "", fmt.Errorf("%w: no caller is known for session key %q: Handset has had no call with it, so it has no number to call", ErrUnknownRecipient, voice.Clip(req.SessionKey, voice.EchoLimit))
		}
		return ss.CallerHash, ss.SessionKey, err
	case req.CallID != "":
		c, err := st.Call(ctx, req.CallID)
		if errors.Is(err, store.ErrNotFound) {
			return "", "", fmt.Errorf("%w: there is no call %s", ErrUnknownRecipient, voice.Clip(string(req.CallID), voice.EchoLimit))
		}
		if err == nil && c.CallerHash == "" {
			return "", "", fmt.Errorf("%w: call %s: %s", ErrCannotDeliver, req.CallID, unknownCaller(c))
		}
		hash = c.CallerHash
	default:
		hash = req.CallerHash
	}
	if err != nil {
		return "", "", err
	}
	ss, err := st.Session(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", "", fmt.Errorf("%w: caller %s has never called", ErrUnknownRecipient, voice.Clip(hash, voice.EchoLimit))
	case err != nil:
		return "", "", err
	}
	return hash, ss.SessionKey, nil
}

// unknownCaller says why a call has no caller hash, hence no callback.
func unknownCaller(c store.Call) string {
	if _, reason := callbackNumber(c); reason != "" {
		return reason
	}
	// A dialable number without a hash: its attestation was below the setting's level.
	return "the caller's number was not verified well enough to call back (HANDSET_CALLER_MEMORY_ATTESTATION): " +
		"calling it could reach someone else"
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
