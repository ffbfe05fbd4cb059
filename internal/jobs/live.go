package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// LiveCalls finds the calls running on this node (call.Manager).
type LiveCalls interface {
	Get(id voice.CallID) (*call.Call, bool)
}

// ErrRefused marks a request Handset will not carry out by policy (a transfer to a number
// off the allow-list); the message says which rule.
var ErrRefused = errors.New("refused")

// Refused reports whether a failed job's error (as the store keeps it) was a refusal.
func Refused(jobError string) bool { return strings.HasPrefix(jobError, ErrRefused.Error()+": ") }

// TransferJob moves a live call to a person.
type TransferJob struct {
	CallID voice.CallID `json:"call_id"`
	To     string       `json:"to"`
	Reason string       `json:"reason,omitempty"` // why the agent hands over, for the journal
}

// AllowList is a set of numbers that may be dialled: where calls may be transferred
// (HANDSET_TRANSFER_ALLOW), where the tools token may place calls (HANDSET_CALL_ALLOW).
// Exact E.164 numbers, or prefixes ending in * ("+1415555*"). Empty allows none, so a
// prompt-injected agent cannot send callers to a premium-rate number.
type AllowList []string

// ParseAllowList reads a comma-separated list, checking each entry.
func ParseAllowList(s string) (AllowList, error) {
	var out AllowList
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if prefix, ok := strings.CutSuffix(e, "*"); ok {
			if !strings.HasPrefix(prefix, "+") || strings.Trim(prefix[1:], "0123456789") != "" || len(prefix) < 3 {
				return nil, fmt.Errorf("allow-list entry %q: a prefix is + and at least two digits, then *", voice.Clip(e, voice.EchoLimit))
			}
			out = append(out, e)
			continue
		}
		n, err := carrier.NormalizeNumber(e)
		if err != nil {
			return nil, fmt.Errorf("allow-list entry: %w", err)
		}
		out = append(out, n)
	}
	return out, nil
}

// CheckTransfer checks a transfer's number before the job is queued, so a malformed one
// is the request's to fix; the error wraps ErrBadRequest. The allow-list is the job's.
func CheckTransfer(to string) error {
	if _, err := carrier.NormalizeNumber(to); err != nil {
		return fmt.Errorf("%w: to: %w", ErrBadRequest, err)
	}
	return nil
}

// Allows reports whether number (E.164) may be dialled.
func (a AllowList) Allows(number string) bool {
	for _, e := range a {
		if prefix, ok := strings.CutSuffix(e, "*"); ok && strings.HasPrefix(number, prefix) || e == number {
			return true
		}
	}
	return false
}

// Transfers runs transfer jobs on the node holding the call.
type Transfers struct {
	Calls LiveCalls
	// Carriers are the controls of the configured carriers, by name: a call is transferred
	// through the carrier it came in on.
	Carriers map[string]carrier.Carrier
	// NoAccount says what a carrier without an account needs, for the refusal: "set X and
	// Y"; "" (or a nil NoAccount): the refusal says only that the call cannot be transferred.
	NoAccount func(carrierName string) string
	Allow     AllowList
	CallerID  string // shown to the person dialled; empty: the carrier's default
}

// carrierOf is the control that can transfer the call info describes: its own carrier's,
// or the refusal that says why there is none.
func (t *Transfers) carrierOf(info voice.LegInfo) (carrier.Carrier, error) {
	if info.CarrierRef == "" { // no carrier holds the call (the browser page)
		return nil, fmt.Errorf("%w: a %s call cannot be transferred", ErrRefused, info.Carrier)
	}
	if c := t.Carriers[info.Carrier]; c != nil {
		return c, nil
	}
	var need string
	if t.NoAccount != nil {
		need = t.NoAccount(info.Carrier)
	}
	if need == "" { // a carrier this binary does not know
		return nil, fmt.Errorf("%w: a %s call cannot be transferred", ErrRefused, info.Carrier)
	}
	return nil, fmt.Errorf("%w: transfers of %s calls need its REST API: %s", ErrRefused, info.Carrier, need)
}

// Run checks the number against the allow-list and has the carrier dial it, journaling
// each step in the call's journal. A refusal is final.
func (t *Transfers) Run(ctx context.Context, l *Lease) (any, error) {
	var job TransferJob
	if err := l.Payload(&job); err != nil {
		return nil, err
	}
	c, ok := t.Calls.Get(job.CallID)
	if !ok {
		return nil, Permanent(fmt.Errorf("call %s is not running on this node (%s): it has ended, or its media has not arrived yet", job.CallID, l.Owner()))
	}
	j := c.Journal()
	j.Record(l.Now(), obs.Event{Type: obs.TransferRequested, Name: job.To, Text: job.Reason})
	to, err := carrier.NormalizeNumber(job.To)
	if err == nil && !t.Allow.Allows(to) {
		err = fmt.Errorf("%w: %s is not on the transfer allow-list (HANDSET_TRANSFER_ALLOW)", ErrRefused, to)
	}
	if err != nil {
		j.Record(l.Now(), obs.Event{Type: obs.TransferRefused, Name: job.To, Message: err.Error()})
		return nil, Permanent(err)
	}
	info := c.Info()
	through, err := t.carrierOf(info)
	if err != nil {
		j.Record(l.Now(), obs.Event{Type: obs.TransferRefused, Name: to, Message: err.Error()})
		return nil, Permanent(err)
	}
	// Journaled before the request: the carrier ends the media stream (and with it the
	// call's journal) before it answers.
	j.Record(l.Now(), obs.Event{Type: obs.TransferStarted, Name: to})
	c.Transferring(true)
	if err := through.Transfer(ctx, info.CarrierRef, to, t.CallerID); err != nil {
		c.Transferring(false)
		j.Record(l.Now(), obs.Event{Type: obs.TransferFailed, Name: to, Message: err.Error()})
		return nil, Permanent(fmt.Errorf("the carrier did not transfer the call: %w", err))
	}
	return map[string]string{"call_id": string(job.CallID), "to": to, "call_sid": info.CarrierRef}, nil
}

// HandoffJob continues a conversation in another channel.
type HandoffJob struct {
	CallID  voice.CallID `json:"call_id"`
	Channel string       `json:"channel"`          // where the runtime should continue: telegram, slack, sms, …
	Note    string       `json:"note,omitempty"`   // what the agent wants the next channel to know
	Hangup  bool         `json:"hangup,omitempty"` // end the call once handed off
}

// Handoff is what the runtime's webhook receives.
type Handoff struct {
	Type        string           `json:"type"` // "handset.handoff"
	CallID      voice.CallID     `json:"call_id"`
	Channel     string           `json:"channel"`
	Note        string           `json:"note,omitempty"`
	SessionKey  string           `json:"session_key,omitempty"`
	CallerHash  string           `json:"caller_hash,omitempty"`
	Transcript  []HandoffLine    `json:"transcript"`
	RequestedAt time.Time        `json:"requested_at"`
	Call        HandoffCallState `json:"call"`
}

// HandoffLine is one line of the conversation.
type HandoffLine struct {
	Turn        int       `json:"turn"`
	Role        string    `json:"role"`
	Text        string    `json:"text"`
	At          time.Time `json:"at"`
	Interrupted bool      `json:"interrupted,omitempty"`
}

// HandoffCallState says whether the call goes on.
type HandoffCallState struct {
	Live    bool   `json:"live"`
	Carrier string `json:"carrier"`
}

// TranscriptFlusher saves a live call's transcript lines still in flight.
type TranscriptFlusher interface {
	FlushTranscript(ctx context.Context, id voice.CallID) error
}

// Handoffs runs handoff jobs.
type Handoffs struct {
	Store   store.Store
	Calls   LiveCalls
	Flusher TranscriptFlusher
	URL     string // HANDSET_HANDOFF_URL: the runtime's webhook
	Key     string // HANDSET_HANDOFF_KEY: its bearer key
	Client  *http.Client
}

// Run posts the transcript and session key to the runtime's webhook. The request carries
// an Idempotency-Key (the job), since a retry after a lost answer posts it again.
func (h *Handoffs) Run(ctx context.Context, l *Lease) (any, error) {
	var job HandoffJob
	if err := l.Payload(&job); err != nil {
		return nil, err
	}
	var j *obs.Journal
	c, live := h.Calls.Get(job.CallID)
	if live {
		j = c.Journal()
		j.Record(l.Now(), obs.Event{Type: obs.HandoffRequested, Name: job.Channel, Text: job.Note})
		if h.Flusher != nil {
			_ = h.Flusher.FlushTranscript(ctx, job.CallID)
		}
	}
	fail := func(err error) (any, error) {
		if j != nil {
			j.Record(l.Now(), obs.Event{Type: obs.HandoffFailed, Name: job.Channel, Message: err.Error()})
		}
		return nil, err
	}
	if h.URL == "" {
		return fail(Permanent(fmt.Errorf("%w: no channel to hand off to: set HANDSET_HANDOFF_URL to the runtime's webhook", ErrRefused)))
	}
	body, err := h.payload(ctx, job, live, l.Job.CreatedAt)
	if err != nil {
		return fail(err)
	}
	if err := h.post(ctx, body, l.Job.ID); err != nil {
		return fail(err)
	}
	if j != nil {
		j.Record(l.Now(), obs.Event{Type: obs.HandoffDone, Name: job.Channel})
	}
	if live && job.Hangup {
		c.End(voice.EndAgentHangup)
	}
	return map[string]any{"call_id": job.CallID, "channel": job.Channel, "lines": len(body.Transcript)}, nil
}

func (h *Handoffs) payload(ctx context.Context, job HandoffJob, live bool, requested time.Time) (Handoff, error) {
	rec, err := h.Store.Call(ctx, job.CallID)
	if err != nil {
		return Handoff{}, Permanent(fmt.Errorf("call %s: %w", job.CallID, err))
	}
	lines, err := h.Store.Transcript(ctx, job.CallID)
	if err != nil {
		return Handoff{}, fmt.Errorf("read the transcript: %w", err)
	}
	out := Handoff{Type: "handset.handoff", CallID: job.CallID, Channel: job.Channel, Note: job.Note,
		CallerHash: rec.CallerHash, RequestedAt: requested, Transcript: []HandoffLine{},
		Call: HandoffCallState{Live: live, Carrier: rec.Carrier}}
	if ss, err := h.Store.Session(ctx, rec.CallerHash); err == nil {
		out.SessionKey = ss.SessionKey
	}
	for _, ln := range lines {
		out.Transcript = append(out.Transcript, HandoffLine{Turn: ln.Turn, Role: string(ln.Role), Text: ln.Text, At: ln.At, Interrupted: ln.Interrupted})
	}
	return out, nil
}

// post delivers the handoff: 2xx is done, 4xx is refused for good, the rest is retried.
func (h *Handoffs) post(ctx context.Context, body Handoff, jobID int64) error {
	data, err := json.Marshal(body)
	if err != nil {
		return Permanent(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, h.URL, bytes.NewReader(data))
	if err != nil {
		return Permanent(fmt.Errorf("HANDSET_HANDOFF_URL: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", fmt.Sprintf("handset-handoff-%d", jobID))
	if h.Key != "" {
		req.Header.Set("Authorization", "Bearer "+h.Key)
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return fmt.Errorf("handoff webhook: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, voice.EchoLimit+1))
	snippet := voice.Clip(strings.TrimSpace(string(raw)), voice.EchoLimit)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return Permanent(fmt.Errorf("handoff webhook answered HTTP %d, a redirect to %s: Handset follows none, so the transcript and HANDSET_HANDOFF_KEY go only to HANDSET_HANDOFF_URL; set it to the final URL",
			resp.StatusCode, voice.Clip(redactLocation(resp.Header.Get("Location")), voice.EchoLimit)))
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
		return Permanent(fmt.Errorf("handoff webhook refused it: HTTP %d %s", resp.StatusCode, snippet))
	}
	return fmt.Errorf("handoff webhook: HTTP %d %s", resp.StatusCode, snippet)
}

// client is the configured client that follows no redirect: a redirect would carry the
// handoff key and the conversation to a place nobody configured.
func (h *Handoffs) client() *http.Client {
	var c http.Client
	if h.Client != nil {
		c = *h.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// redactLocation is a redirect's target without what may be a credential (user info,
// query), for an error message.
func redactLocation(loc string) string {
	u, err := url.Parse(loc)
	if err != nil || loc == "" {
		return "an unreadable location"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

func jsonBytes(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, Permanent(err)
	}
	return b, nil
}
