package session

import (
	"context"

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

	caller, callee string
}

// NewContext describes the call on a leg, hashing its numbers with secret. The "caller"
// is always the person on the line: the number that called in, or for an outbound call the
// number Handset called, so a callback reaches the memory of that person's earlier calls.
func NewContext(info voice.LegInfo, secret []byte) Context {
	person, line := info.From, info.To
	if info.Direction == voice.Outbound {
		person, line = info.To, info.From
	}
	return Context{
		CallID: info.CallID, Carrier: info.Carrier, Direction: info.Direction,
		CallerHash: CallerHash(secret, person), CalleeHash: CallerHash(secret, line),
		caller: person, callee: line,
	}
}

// RawNumbers returns the person's and the business line's numbers. Only the store may keep them.
func (c Context) RawNumbers() (caller, callee string) { return c.caller, c.callee }

// String names the call by id and caller hash: never the numbers.
func (c Context) String() string {
	return "call " + string(c.CallID) + " caller " + c.CallerHash
}

type ctxKey struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c Context) context.Context { return context.WithValue(ctx, ctxKey{}, c) }

// From returns the session context ctx carries, if any.
func From(ctx context.Context) (Context, bool) {
	c, ok := ctx.Value(ctxKey{}).(Context)
	return c, ok
}
