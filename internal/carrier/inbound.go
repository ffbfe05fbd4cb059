package carrier

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// Inbound is what the gateway gives a carrier to serve its calls: the carrier's webhooks
// and media streams turn each call into a voice.Leg and hand it to Admit.
type Inbound struct {
	// PublicURL is the base URL the carrier reaches Handset at (HANDSET_PUBLIC_URL); empty:
	// each request's own.
	PublicURL string
	// TrustedProxies are the peers whose forwarded host and scheme are believed when
	// PublicURL is empty.
	TrustedProxies []netip.Prefix
	// Memory is the calls' memory every node shares.
	Memory Memory
	// Draining says the node takes no new calls: the carrier sends them elsewhere.
	Draining func() bool
	// Admit starts a call on leg and returns a channel closed when it is over; an error
	// refuses the call.
	Admit func(leg voice.Leg) (<-chan struct{}, error)
	// OnProgress is told how the calls Handset placed progress. It runs in the carrier's
	// request handler: it must be short.
	OnProgress func(Progress)
	Logger     *slog.Logger
}

// Progress is a carrier's report of where a call stands.
type Progress struct {
	// CallID is Handset's id of a call it placed; empty for a call that came in.
	CallID     voice.CallID
	Ref        string // the carrier's id of the call; empty when not known yet
	Status     Status
	AnsweredBy AnsweredBy
	Duration   time.Duration
	// Declined: a machine answered and Handset hung up at once (MachineHangup); Status is
	// then empty.
	Declined bool
}

// Ended reports whether the call is over.
func (p Progress) Ended() bool { return p.Declined || p.Status.Ended() }

// Answer is what a carrier answered a call's first webhook with.
type Answer struct {
	Ref        string // the carrier's id of the call
	RequestKey string // the key the carrier repeats on retries of the same request; may be empty
	Body       []byte
	At         time.Time
	Streamed   bool // the call's media stream has opened
}

// Memory remembers, for every node at once (the gateway keeps it in the store), each
// call's first webhook answer and whether its media stream has opened: what makes a
// repeated webhook harmless and a stream open once across a cluster.
type Memory interface {
	// Remember keeps a as a.Ref's answer unless one is kept, and returns the kept one and
	// whether it is a.
	Remember(ctx context.Context, a Answer) (kept Answer, first bool, err error)
	// Streamed records that call ref's media stream opened at `at`: ErrStreamOpened when
	// it had already, ErrCallUnknown when no answer is kept.
	Streamed(ctx context.Context, ref string, at time.Time) error

	// Progressed keeps p (by p.Ref, required) as the latest word on the call: an ended
	// status is never replaced by a non-ended one nor by an earlier rank (see Progress.Merge);
	// a verdict (AnsweredBy) once set is kept, save a machine's provisional verdict
	// (AnsweredMachine) refined by its greeting's end; Duration is kept once known, and so is
	// p.CallID. It is how a carrier whose API cannot say how a call ended (busy, no answer)
	// or what machine detection decided remembers what its webhooks said, for every node.
	Progressed(ctx context.Context, p Progress, at time.Time) error
	// Progress is the latest word on call ref (looked up by ref or by an alias of it); its
	// Ref is the name the call was first known by. ok is false when there is none.
	Progress(ctx context.Context, ref string) (p Progress, ok bool, err error)
	// Once reports whether key is seen for the first time (webhook event ids, signature
	// nonces); kept 24 h like the rest.
	Once(ctx context.Context, key string, at time.Time) (first bool, err error)
	// Alias makes other a second name of call ref (Plivo's request id and call id):
	// Progress, Streamed and Remember find the same call by either. What was kept under
	// other alone joins ref's; ErrAliasTaken when other already names another call.
	Alias(ctx context.Context, ref, other string) error
}

// Memory errors.
var (
	// ErrStreamOpened: the call's media stream has opened already.
	ErrStreamOpened = errors.New("the call's media stream has opened already")
	// ErrCallUnknown: no webhook answer is remembered for the call.
	ErrCallUnknown = errors.New("no webhook answer is remembered for the call")
	// ErrAliasTaken: the name is already another call's.
	ErrAliasTaken = errors.New("the name is already another call's")
)
