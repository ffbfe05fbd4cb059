package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// target finds the call a transfer or handoff is about: by call id, or the latest call of
// a session key (what a runtime's tool knows).
func (a *API) target(ctx context.Context, r *http.Request) (store.Call, error) {
	if key := r.PathValue("key"); key != "" {
		if id, ok := strings.CutPrefix(session.StoredKey(key), jobs.CallKeyPrefix); ok && id != "" {
			return a.call(ctx, voice.CallID(id)) // a caller without a caller hash: the call's own session
		}
		ss, err := a.o.Store.SessionByKey(ctx, session.StoredKey(key))
		if errors.Is(err, store.ErrNotFound) {
			return store.Call{}, fail(http.StatusNotFound, "no call has had session key %q", echo(key))
		}
		if err != nil {
			return store.Call{}, err
		}
		return a.call(ctx, ss.LastCall)
	}
	return a.call(ctx, voice.CallID(r.PathValue("id")))
}

// settle ends c in the store when it is recorded running on a node that has stopped
// heartbeating (the lost-call sweep every node runs would end it shortly anyway), so work
// aimed at it is answered now instead of waiting for a node that will never take it.
func (a *API) settle(ctx context.Context, c store.Call) (store.Call, error) {
	if a.o.Liveness == nil || !c.EndedAt.IsZero() || c.Journal == "" {
		return c, nil
	}
	lost, _, err := a.o.Liveness.Lost(ctx, c.Node)
	if err != nil || !lost {
		return c, err
	}
	if _, err := a.o.Liveness.Sweep(ctx); err != nil {
		return c, err
	}
	return a.call(ctx, c.ID)
}

// ended refuses work on a call that is over, saying why.
func ended(c store.Call, what string) error {
	if c.Outcome == store.OutcomeNodeLost {
		return fail(http.StatusConflict, "call %s was lost with its node %s, which stopped without ending it (%s at %s): there is nothing to %s",
			c.ID, c.Node, c.Outcome, c.EndedAt.UTC().Format(time.RFC3339), what)
	}
	return fail(http.StatusConflict, "call %s has ended (%s): there is nothing to %s", c.ID, c.Outcome, what)
}

type transferRequest struct {
	To     string `json:"to"`
	Reason string `json:"reason,omitempty"`
}

// transfer queues a transfer on the node holding the call and waits for it.
func (a *API) transfer(w http.ResponseWriter, r *http.Request) error {
	var req transferRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.To == "" {
		return fail(http.StatusBadRequest, "to: the number to transfer the call to is missing")
	}
	if err := jobs.CheckTransfer(req.To); err != nil {
		return queueError(err)
	}
	c, err := a.target(r.Context(), r)
	if err == nil {
		c, err = a.settle(r.Context(), c)
	}
	if err != nil {
		return err
	}
	if !c.EndedAt.IsZero() {
		return ended(c, "transfer")
	}
	return a.runLive(w, r, c, jobs.KindTransfer, jobs.TransferJob{CallID: c.ID, To: req.To, Reason: req.Reason}, true)
}

type handoffRequest struct {
	Channel string `json:"channel"`
	Note    string `json:"note,omitempty"`
	Hangup  bool   `json:"hangup,omitempty"`
}

// handoff queues a handoff of the call's conversation to another channel.
func (a *API) handoff(w http.ResponseWriter, r *http.Request) error {
	var req handoffRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Channel == "" {
		return fail(http.StatusBadRequest, "channel: say where the conversation continues (telegram, slack, sms, …)")
	}
	c, err := a.target(r.Context(), r)
	if err == nil {
		c, err = a.settle(r.Context(), c) // a lost call is handed off as an ended one
	}
	if err != nil {
		return err
	}
	live := c.EndedAt.IsZero()
	return a.runLive(w, r, c, jobs.KindHandoff, jobs.HandoffJob{CallID: c.ID, Channel: req.Channel, Note: req.Note, Hangup: req.Hangup && live}, live)
}

// runLive queues a job about call c (on the node holding it when bound) and waits up to
// LiveWait for it: its result (200), its refusal (403) or failure (502), or, when no node
// took it in time, a cancellation (503) that keeps it from running late. A job that ran,
// failed and waits for another attempt when the wait runs out is cancelled too, and
// answered with its own failure (502): the handoff webhook's status and words.
func (a *API) runLive(w http.ResponseWriter, r *http.Request, c store.Call, kind string, payload any, bound bool) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	nj := store.NewJob{Kind: kind, Payload: data, MaxAttempts: 1}
	if bound {
		nj.Node = c.Node
	}
	if kind == jobs.KindHandoff {
		nj.MaxAttempts = 3 // a webhook that is down for a moment is tried again
	}
	j, err := a.o.Store.Enqueue(r.Context(), nj)
	if err != nil {
		return err
	}
	a.o.Wake()
	ctx, cancel := context.WithTimeout(r.Context(), a.o.LiveWait)
	defer cancel()
	done, err := jobs.Wait(ctx, a.o.Store, j.ID)
	switch {
	case err == nil:
		return answerDone(w, a.viewer(r), done)
	case r.Context().Err() != nil:
		return r.Context().Err()
	}
	if now, err := a.o.Store.Job(r.Context(), j.ID); err == nil {
		done = now // the last poll may be a moment old
	}
	if done.State == store.JobCompleted || done.State == store.JobFailed {
		return answerDone(w, a.viewer(r), done)
	}
	if done.State == store.JobPending {
		// Nobody ran it, or it failed and waits to be tried again: either way it must not
		// run after the request gave up on it. A failure keeps its own error.
		tried := done.Attempts > 0 && done.Error != ""
		reason := done.Error
		if !tried {
			reason = "no node took it within " + a.o.LiveWait.String() + " (the call's node " + c.Node + " is not running jobs)"
		}
		cerr := a.o.Store.Cancel(r.Context(), j.ID, reason, time.Now())
		switch {
		case cerr == nil && !tried:
			return fail(http.StatusServiceUnavailable, "no node took the %s of call %s within %v: the node holding the call (%s) is not running jobs",
				kind, c.ID, a.o.LiveWait, c.Node)
		case cerr != nil && !errors.Is(cerr, store.ErrNotPending):
			return cerr
		}
		if done, err = a.o.Store.Job(r.Context(), j.ID); err != nil {
			return err
		}
		if done.State == store.JobCompleted || done.State == store.JobFailed {
			return answerDone(w, a.viewer(r), done)
		}
	}
	v := a.viewer(r).job(done)
	v.Note = "still running: follow it at /api/jobs/" + strconv.FormatInt(j.ID, 10)
	writeJSON(w, http.StatusAccepted, v)
	return nil
}

// answerDone writes a finished job: its result (200), its refusal (403) or its failure
// (502).
func answerDone(w http.ResponseWriter, v viewer, done store.Job) error {
	switch {
	case done.State == store.JobCompleted:
		writeJSON(w, http.StatusOK, v.job(done))
	case jobs.Refused(done.Error):
		writeJSON(w, http.StatusForbidden, withError(v, done))
	default:
		writeJSON(w, http.StatusBadGateway, withError(v, done))
	}
	return nil
}

// withError is a failed job with its error as the answer's "error" too.
func withError(v viewer, j store.Job) map[string]any {
	jv := v.job(j)
	return map[string]any{"error": jv.Error, "job": jv}
}

// deliver plans a callback and queues it.
func (a *API) deliver(w http.ResponseWriter, r *http.Request) error {
	var req jobs.DeliverRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	plan, err := jobs.PlanDelivery(r.Context(), a.o.Store, a.o.Channels, req)
	switch {
	case errors.Is(err, jobs.ErrBadRequest):
		return fail(http.StatusBadRequest, "%v", err)
	case errors.Is(err, jobs.ErrUnknownRecipient):
		return fail(http.StatusNotFound, "cannot deliver: %v", err)
	case errors.Is(err, jobs.ErrCannotDeliver):
		return fail(http.StatusUnprocessableEntity, "%v", err)
	case err != nil:
		return err
	}
	j, err := jobs.QueueCall(r.Context(), a.o.Store, plan, jobs.QueueOptions{DedupeKey: dedupe("deliver", req.IdempotencyKey)})
	if errors.Is(err, jobs.ErrBadRequest) {
		// Only the recorded number can be wrong here, and it is not the asker's to read.
		return fail(http.StatusUnprocessableEntity, "cannot deliver: the number on record for this caller cannot be dialled")
	}
	if err := queueError(err); err != nil {
		return err
	}
	a.o.Wake()
	return a.answerJob(w, r, j, "the call is queued; the job's result says whether the message was heard")
}

// getSession shows a session: whose it is, how often they called, their recent calls.
func (a *API) getSession(w http.ResponseWriter, r *http.Request) error {
	key := session.StoredKey(r.PathValue("key"))
	ss, err := a.o.Store.SessionByKey(r.Context(), key)
	if errors.Is(err, store.ErrNotFound) {
		return fail(http.StatusNotFound, "no call has had session key %q", echo(key))
	}
	if err != nil {
		return err
	}
	calls, err := a.o.Store.Calls(r.Context(), store.ListCalls{CallerHash: ss.CallerHash, Limit: 20})
	if err != nil {
		return err
	}
	views := make([]callView, len(calls))
	for i, c := range calls {
		views[i] = a.viewer(r).call(c)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"session_key": ss.SessionKey, "caller_hash": ss.CallerHash, "calls_count": ss.Calls,
		"first_seen": ss.FirstSeen, "last_seen": ss.LastSeen, "last_call": ss.LastCall, "calls": views,
	})
	return nil
}
