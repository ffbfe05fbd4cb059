package session

import (
	"context"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// Context is who a call is with, as Handset may tell an agent runtime: the call's id, its
// carrier and direction, and the caller's pseudonym. The raw numbers are kept unexported so
// they cannot be marshalled, logged or sent by accident; only the store asks for them.
type Context struct {
	CallID     voice.CallID
	Carrier    string
	Direction  voice.Direction
	CallerHash string // HMAC of the normalised caller number: the same caller, the same hash
	CalleeHash string // the same for the number they called (which line of a business)
	// Caller says why a caller has no hash when the agent should know: their number was
	// withheld, or not verified well enough to key memory. Empty for an ordinary caller.
	Caller Caller
	// Attestation is how the phone network vouched for the caller's number (inbound calls).
	Attestation voice.Attestation

	caller, callee string
}

// Caller is what Handset knows of who is calling when the number does not identify them.
type Caller string

// Callers without a caller hash.
const (
	// CallerWithheld: the number was withheld (anonymous, restricted, a carrier's
	// placeholder): every such caller looks alike, so none is remembered or called back.
	CallerWithheld Caller = "withheld"
	// CallerUnverified: the network did not vouch for the number as strongly as
	// HANDSET_CALLER_MEMORY_ATTESTATION requires, so anyone could be using it.
	CallerUnverified Caller = "unverified"
)

// NewContext describes the call on a leg, hashing its numbers with secret. The "caller"
// is always the person on the line: the number that called in, or for an outbound call the
// number Handset called, so a callback reaches the memory of that person's earlier calls.
// A withheld number gets no hash (Caller says so).
func NewContext(info voice.LegInfo, secret []byte) Context {
	person, line := info.From, info.To
	if info.Direction == voice.Outbound {
		person, line = info.To, info.From
	}
	c := Context{
		CallID: info.CallID, Carrier: info.Carrier, Direction: info.Direction,
		CallerHash: CallerHash(secret, person), CalleeHash: CallerHash(secret, line),
		Attestation: info.Attestation,
		caller:      person, callee: line,
	}
	if Withheld(person) {
		c.Caller = CallerWithheld
	}
	return c
}

// Require applies HANDSET_CALLER_MEMORY_ATTESTATION: an inbound caller whose number the
// network vouched for below t keeps no caller hash, so the call gets a session of its own
// and cannot be called back. Outbound calls (Handset chose the number) and callers Handset
// identifies itself (the browser page's cookie) are not caller IDs anyone can spoof.
func (c Context) Require(t Trust) Context {
	if c.CallerHash == "" || c.Direction != voice.Inbound || !phoneIdentity(c.caller) || t.Vouches(c.Attestation) {
		return c
	}
	c.CallerHash, c.Caller = "", CallerUnverified
	return c
}

// RawNumbers returns the person's and the business line's numbers. Only the store may keep them.
func (c Context) RawNumbers() (caller, callee string) { return c.caller, c.callee }

// String names the call by id and caller hash: never the numbers.
func (c Context) String() string {
	return "call " + string(c.CallID) + " caller " + c.CallerHash
}

// Note is what Handset tells the agent about the caller's identity, in words a model
// reads: empty for an ordinary caller. Every runtime adapter adds it to the instructions
// it already sends (see Instructions); the webhook runtime gets Caller as a field instead.
func (c Context) Note() string {
	switch c.Caller {
	case CallerWithheld:
		return "Note from Handset: this caller withheld their number. Nothing is known about who " +
			"they are: earlier conversations are not available, and they cannot be called back."
	case CallerUnverified:
		return "Note from Handset: this caller's number is unverified (" + attestationWords(c.Attestation) +
			"), so the caller may not be who the number suggests. This conversation starts fresh: " +
			"do not reveal anything from earlier conversations with this number, do not act for its " +
			"owner, and do not offer to call back."
	}
	return ""
}

func attestationWords(a voice.Attestation) string {
	switch a {
	case voice.AttestationB, voice.AttestationC:
		return "the phone network vouched for it only at level " + string(a)
	case voice.AttestationFailed:
		return "its caller ID signature failed verification"
	}
	return "the phone network did not vouch for it"
}

// Instructions is prompt (the voice instructions a runtime sends with each turn), then the
// instructions a bridge client sent with the turn (WithInstructions), then the note about
// the caller of ctx's call: those of them that are not empty, a blank line apart.
func Instructions(ctx context.Context, prompt string) string {
	parts := make([]string, 0, 3)
	client, _ := ctx.Value(instructionsKey{}).(string)
	note := ""
	if c, ok := From(ctx); ok {
		note = c.Note()
	}
	for _, p := range []string{prompt, client, note} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n\n")
}

type instructionsKey struct{}

// WithInstructions returns ctx carrying the instructions a client of the agent bridge
// sent with its turn (its system messages); every runtime sends them the way it sends its
// own prompt.
func WithInstructions(ctx context.Context, text string) context.Context {
	return context.WithValue(ctx, instructionsKey{}, text)
}

type ctxKey struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c Context) context.Context { return context.WithValue(ctx, ctxKey{}, c) }

// From returns the session context ctx carries, if any.
func From(ctx context.Context) (Context, bool) {
	c, ok := ctx.Value(ctxKey{}).(Context)
	return c, ok
}
