package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Job kinds.
const (
	KindCall     = "outbound_call" // place a call (one number, a dialer list, a delivery)
	KindTransfer = "transfer"      // move a live call to a person
	KindHandoff  = "handoff"       // continue a conversation in another channel
)

// CallJob is the payload of an outbound call.
type CallJob struct {
	To   string `json:"to"`
	From string `json:"from,omitempty"` // default HANDSET_PHONE_NUMBER
	// FirstMessage is spoken when the call is answered (default HANDSET_FIRST_MESSAGE).
	FirstMessage string `json:"first_message,omitempty"`
	// Deliver marks a callback delivery (POST /api/deliver): FirstMessage is the message,
	// an answering machine gets it as a voicemail, and the result says whether it was heard.
	Deliver bool `json:"deliver,omitempty"`
	// SessionKey is the conversation a delivery belongs to (shown in results, never sent
	// to the carrier).
	SessionKey string `json:"session_key,omitempty"`
	// OnMachine is what to do when a machine answers: hangup, message or talk (default
	// HANDSET_MACHINE_DETECTION for calls, message for deliveries).
	OnMachine string `json:"on_machine,omitempty"`
	// Carrier places the call when it is configured (a callback goes through the carrier
	// the person called on); empty or unconfigured: the Calls' Dialer.
	Carrier string `json:"carrier,omitempty"`
}

// CallResult is a finished call job's result.
type CallResult struct {
	CallID     voice.CallID `json:"call_id"`
	CallSID    string       `json:"call_sid"`
	Outcome    string       `json:"outcome"` // how the call ended: caller_hangup, agent_hangup, machine, transferred, …
	AnsweredBy string       `json:"answered_by,omitempty"`
	Seconds    int          `json:"seconds,omitempty"`
	// Delivered (deliveries): spoken (a person heard it whole), voicemail (left on a
	// machine), interrupted (the person cut in; Heard is what they heard) or no.
	Delivered string `json:"delivered,omitempty"`
	Heard     string `json:"heard,omitempty"`
}

// callProgress is a call job's checkpoint: once CallID is set a record exists, once SID is
// set the carrier has the call. A node resuming the job never places a second call for it.
type callProgress struct {
	CallID   voice.CallID `json:"call_id"`
	SID      string       `json:"sid,omitempty"`
	PlacedAt time.Time    `json:"placed_at,omitzero"`
	// Carrier placed the call and follows it; empty in a checkpoint written before calls
	// could go through several carriers: the Dialer.
	Carrier string `json:"carrier,omitempty"`
}

// Calls runs outbound call jobs.
type Calls struct {
	Store       store.Store
	Dialer      carrier.Carrier // places the calls and follows them (HANDSET_CARRIER's)
	PublicURL   string          // HANDSET_PUBLIC_URL: where the carrier reaches this cluster
	From        string          // HANDSET_PHONE_NUMBER
	Agent       string          // the runtime's name, for the call record
	HashSecret  []byte          // caller hashes
	RingTimeout time.Duration
	MaxCall     time.Duration
	OnMachine   carrier.MachinePolicy // for calls that do not say
	// RedialAfter is the least wait before calling again after busy or no answer
	// (default 5 minutes).
	RedialAfter time.Duration
	// Poll is how often the store is read for the call's end (default 500ms).
	Poll time.Duration
	// AdoptWait is how long a resumed job waits for the carrier's first status callback
	// of a call its previous owner may have placed just before dying (default 15s).
	AdoptWait time.Duration
	Logger    *slog.Logger

	// Dialers are every configured carrier by name, for the jobs that name theirs
	// (CallJob.Carrier); nil: the Dialer places every call.
	Dialers map[string]carrier.Carrier
}

// Timings of a call job.
const (
	// defaultAdoptWait: see Calls.AdoptWait.
	defaultAdoptWait = 15 * time.Second
	// carrierCheck is how often a call still running is looked up on the carrier, in case
	// the node that answered it died and no end was recorded.
	carrierCheck = 15 * time.Second
	// endGrace is how long a call the carrier reports ended may stay unended in the store
	// (the media node writes its own, more precise end) before the carrier's is recorded.
	endGrace = 5 * time.Second
)

// Run places the call (unless a previous owner already did), waits for it to end and
// returns its outcome.
func (c *Calls) Run(ctx context.Context, l *Lease) (any, error) {
	var job CallJob
	if err := l.Payload(&job); err != nil {
		return nil, err
	}
	var p callProgress
	if _, err := l.Resume(&p); err != nil {
		return nil, err
	}
	log := c.log().With("job", l.Job.ID)
	if p.SID == "" {
		if err := c.place(ctx, l, job, &p, log); err != nil {
			return nil, err
		}
	}
	rec, err := c.waitEnd(ctx, l, p)
	if err != nil {
		return nil, err
	}
	return c.outcome(ctx, l, job, p, rec)
}

// place records the call and asks the carrier for it, adopting a call the job's previous
// owner placed if the carrier has reported one.
func (c *Calls) place(ctx context.Context, l *Lease, job CallJob, p *callProgress, log *slog.Logger) error {
	to, from, err := c.numbers(job)
	if err != nil {
		return Permanent(err)
	}
	if p.CallID == "" {
		p.CallID, p.Carrier = voice.NewCallID(), c.dialer(job.Carrier).Name()
		if err := c.Store.StartCall(ctx, store.Call{
			ID: p.CallID, Carrier: p.Carrier, Direction: voice.Outbound, From: from, To: to,
			CallerHash: session.CallerHash(c.HashSecret, to), Agent: c.Agent, Node: l.Owner(),
			StartedAt: l.Now(), JobID: l.Job.ID,
		}); err != nil {
			return fmt.Errorf("record call: %w", err)
		}
		if err := l.Checkpoint(ctx, p); err != nil {
			return err
		}
	} else if sid, err := c.adopt(ctx, l, p.CallID); err != nil {
		return err
	} else if sid != "" {
		log.Info("resumed a call placed by the job's previous owner", "call", p.CallID, "call_sid", sid)
		p.SID = sid
		return l.Checkpoint(ctx, p)
	}
	policy := carrier.MachinePolicy(job.OnMachine)
	if policy == "" {
		policy = c.OnMachine
	}
	info, err := c.dialer(p.Carrier).Dial(ctx, carrier.Dial{
		CallID: p.CallID, To: to, From: from, PublicURL: c.PublicURL,
		OnMachine: policy, RingTimeout: c.RingTimeout, MaxDuration: c.MaxCall,
	})
	if err != nil {
		return c.placeFailed(ctx, l, p.CallID, err)
	}
	p.SID, p.PlacedAt = info.Ref, l.Now()
	log.Info("call placed", "call", p.CallID, "call_sid", info.Ref)
	if err := l.Checkpoint(ctx, p); err != nil {
		return err
	}
	if err := c.Store.UpdateCall(ctx, p.CallID, store.CallUpdate{CarrierRef: info.Ref}); err != nil {
		log.Warn("call placed but its carrier id was not saved", "err", err)
	}
	return nil
}

// dialer is the configured carrier called name, or the Dialer when there is none.
func (c *Calls) dialer(name string) carrier.Carrier {
	if d := c.Dialers[name]; d != nil {
		return d
	}
	return c.Dialer
}

// placeFailed classifies a refused Dial: what the carrier refuses as bad (an unverified
// From, an unreachable To) or unauthorised is final; the rest is retried.
func (c *Calls) placeFailed(ctx context.Context, l *Lease, id voice.CallID, err error) error {
	if carrier.Permanent(err) {
		_ = c.Store.EndCall(ctx, id, l.Now(), "failed")
		return Permanent(fmt.Errorf("the carrier refused the call: %w", err))
	}
	return fmt.Errorf("place call: %w", err)
}

// adopt waits a little for evidence that the previous owner's call reached the carrier
// (its status callback or its media record the carrier's id) and returns that id.
func (c *Calls) adopt(ctx context.Context, l *Lease, id voice.CallID) (string, error) {
	wait := c.AdoptWait
	if wait <= 0 {
		wait = defaultAdoptWait
	}
	deadline := l.Now().Add(wait)
	for {
		rec, err := c.Store.Call(ctx, id)
		if err != nil {
			return "", fmt.Errorf("look up call %s: %w", id, err)
		}
		if rec.CarrierRef != "" {
			return rec.CarrierRef, nil
		}
		if !l.Now().Before(deadline) {
			return "", nil // never reached the carrier: place it now
		}
		if err := l.Sleep(ctx, c.poll()); err != nil {
			return "", err
		}
	}
}

// waitEnd waits until the call's end is recorded. The node that ran its media records it
// (or the status callback, for a call nobody answered); if the carrier says it ended and
// nobody recorded it (that node died), the carrier's word is recorded here.
func (c *Calls) waitEnd(ctx context.Context, l *Lease, p callProgress) (store.Call, error) {
	nextCheck := l.Now().Add(carrierCheck)
	var endedAt time.Time // when the carrier was first seen to report the end
	for {
		rec, err := c.Store.Call(ctx, p.CallID)
		if err != nil {
			return store.Call{}, fmt.Errorf("look up call %s: %w", p.CallID, err)
		}
		if !rec.EndedAt.IsZero() {
			return rec, nil
		}
		now := l.Now()
		if !endedAt.IsZero() && now.Sub(endedAt) >= endGrace {
			info, err := c.dialer(p.Carrier).Call(ctx, p.SID)
			if err == nil {
				if err := c.Store.EndCall(ctx, p.CallID, now, string(info.Status)); err != nil { // completed, busy, no-answer, …
					return store.Call{}, err
				}
				continue
			}
		}
		if endedAt.IsZero() && !now.Before(nextCheck) {
			nextCheck = now.Add(carrierCheck)
			if info, err := c.dialer(p.Carrier).Call(ctx, p.SID); err == nil && info.Status.Ended() {
				endedAt = now
			}
		}
		if err := l.Sleep(ctx, c.poll()); err != nil {
			return store.Call{}, err
		}
	}
}

// outcome turns the ended call into the job's result, or into a retry for a callee who
// did not pick up.
func (c *Calls) outcome(ctx context.Context, l *Lease, job CallJob, p callProgress, rec store.Call) (any, error) {
	res := CallResult{CallID: p.CallID, CallSID: p.SID, Outcome: rec.Outcome}
	if d := rec.EndedAt.Sub(rec.StartedAt); d > 0 {
		res.Seconds = int(d.Round(time.Second) / time.Second)
	}
	if info, err := c.dialer(p.Carrier).Call(ctx, p.SID); err == nil {
		res.AnsweredBy = string(info.AnsweredBy)
		if info.Duration > 0 {
			res.Seconds = int(info.Duration / time.Second)
		}
	}
	switch rec.Outcome {
	case "busy", "no-answer", "canceled":
		// Nobody picked up: try again later (the next attempt places a new call).
		if err := l.Checkpoint(ctx, nil); err != nil {
			return nil, err
		}
		return nil, RetryAfter(fmt.Errorf("%s: call %s to the number was not answered (%s)", rec.Outcome, p.CallID, p.SID), c.redial())
	case "failed":
		return nil, Permanent(fmt.Errorf("the carrier could not connect call %s (%s)", p.CallID, p.SID))
	}
	if job.Deliver {
		c.delivery(ctx, &res, job)
	}
	return res, nil
}

// delivery says whether the message was heard, from the call's transcript: the first
// message is the agent's turn 0.
func (c *Calls) delivery(ctx context.Context, res *CallResult, job CallJob) {
	res.Delivered = "no"
	lines, err := c.Store.Transcript(ctx, res.CallID)
	if err != nil {
		return
	}
	for _, ln := range lines {
		if ln.Turn != 0 || ln.Role != voice.RoleAssistant {
			continue
		}
		switch {
		case ln.Interrupted:
			res.Delivered, res.Heard = "interrupted", ln.Text
		case carrier.AnsweredBy(res.AnsweredBy).Machine():
			res.Delivered = "voicemail"
		default:
			res.Delivered = "spoken"
		}
	}
}

// numbers checks the job's numbers: the callee, and the caller id (the job's or the
// configured HANDSET_PHONE_NUMBER).
func (c *Calls) numbers(job CallJob) (to, from string, err error) {
	if to, err = carrier.NormalizeNumber(job.To); err != nil {
		return "", "", err
	}
	from = job.From
	if from == "" {
		from = c.From
	}
	if from == "" {
		return "", "", errors.New("no number to call from: set HANDSET_PHONE_NUMBER (a number on the carrier account)")
	}
	if from, err = carrier.NormalizeNumber(from); err != nil {
		return "", "", fmt.Errorf("from: %w", err)
	}
	return to, from, nil
}

func (c *Calls) poll() time.Duration {
	if c.Poll > 0 {
		return c.Poll
	}
	return 500 * time.Millisecond
}

func (c *Calls) redial() time.Duration {
	if c.RedialAfter > 0 {
		return c.RedialAfter
	}
	return 5 * time.Minute
}

func (c *Calls) log() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// messageLimit bounds a spoken message: longer text belongs in the conversation.
const messageLimit = 2000

// ErrBadRequest marks what QueueCall refuses; the message says what to fix.
var ErrBadRequest = errors.New("bad request")

// QueueOptions are how a call job is queued.
type QueueOptions struct {
	DedupeKey   string // a repeat with the same key is refused (store.ErrDuplicate)
	Batch       string
	MaxAttempts int // default 3
	RunAt       time.Time
}

// QueueCall checks a call request and queues it. Errors wrap ErrBadRequest for a request
// to fix, store.ErrDuplicate for a repeated dedupe key.
func QueueCall(ctx context.Context, st store.Store, job CallJob, o QueueOptions) (store.Job, error) {
	job, err := QueueCallCheck(job)
	if err != nil {
		return store.Job{}, err
	}
	payload, err := jsonBytes(job)
	if err != nil {
		return store.Job{}, err
	}
	return st.Enqueue(ctx, store.NewJob{Kind: KindCall, Payload: payload, RunAt: o.RunAt,
		MaxAttempts: o.MaxAttempts, DedupeKey: o.DedupeKey, Batch: o.Batch})
}

// QueueCallCheck checks a call request and returns it with its numbers in E.164 form;
// errors wrap ErrBadRequest and say what to fix.
func QueueCallCheck(job CallJob) (CallJob, error) {
	bad := func(format string, a ...any) (CallJob, error) {
		return CallJob{}, fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, a...)...)
	}
	to, err := carrier.NormalizeNumber(job.To)
	if err != nil {
		return bad("to: %v", err)
	}
	job.To = to
	if job.From != "" {
		if job.From, err = carrier.NormalizeNumber(job.From); err != nil {
			return bad("from: %v", err)
		}
	}
	job.FirstMessage = strings.TrimSpace(job.FirstMessage)
	if len(job.FirstMessage) > messageLimit {
		return bad("the message is %d characters; at most %d can be spoken", len(job.FirstMessage), messageLimit)
	}
	if job.Deliver && job.FirstMessage == "" {
		return bad("a delivery needs a message")
	}
	if !carrier.MachinePolicy(job.OnMachine).Valid() {
		return bad("on_machine %q is not one of hangup, message, talk", voice.Clip(job.OnMachine, voice.EchoLimit))
	}
	return job, nil
}
