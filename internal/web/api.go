// Package web serves Handset's HTTP API under /api, behind the bearer HANDSET_API_TOKEN:
// calls with their transcripts and journals, outbound calls and dialer progress as jobs,
// transfers and channel handoffs of live calls, and callback deliveries. A second bearer,
// HANDSET_TOOLS_TOKEN, reaches only what an agent's tools need (access.go). Every answer
// is JSON; every error says what to fix.
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Options configure the API.
type Options struct {
	Token    string // HANDSET_API_TOKEN: every route
	Store    store.Store
	Channels map[string]jobs.Channel // what can deliver later, by carrier name
	Wake     func()                  // this node's job runner: a job was queued
	CanPlace func() error            // nil when this node can place outbound calls
	Logger   *slog.Logger
	// LiveWait is how long a transfer or handoff request waits for its job (default 10s).
	LiveWait time.Duration
	// CallerHash is the caller hash of a number: the default view names the person an
	// outbound call job dials by it. Nil: by nothing.
	CallerHash func(number string) string

	// ToolsToken (HANDSET_TOOLS_TOKEN) reaches only the routes agent tools need (access.go);
	// empty: no such token.
	ToolsToken string
	// CallAllow (HANDSET_CALL_ALLOW) is where the tools token may place calls.
	CallAllow jobs.AllowList

	// Liveness, when set, tells whether a call's node has stopped heartbeating, so a
	// transfer or handoff of a call whose node is gone is answered at once.
	Liveness *jobs.Liveness
}

// API is the /api handler set.
type API struct {
	o   Options
	log *slog.Logger
}

// New returns the API.
func New(o Options) *API {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LiveWait <= 0 {
		o.LiveWait = 10 * time.Second
	}
	if o.Wake == nil {
		o.Wake = func() {}
	}
	return &API{o: o, log: o.Logger}
}

// Register mounts the routes: those an agent's tools need take the tools token too.
func (a *API) Register(mux *http.ServeMux) {
	route := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		mux.Handle(pattern, a.authed(h, false))
	}
	tool := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		mux.Handle(pattern, a.authed(h, true))
	}
	route("GET /api/calls", a.listCalls)
	tool("GET /api/calls/{id}", a.getCall)
	tool("POST /api/calls", a.placeCall)
	tool("POST /api/calls/{id}/transfer", a.transfer)
	tool("POST /api/calls/{id}/handoff", a.handoff)
	tool("POST /api/sessions/{key}/transfer", a.transfer)
	tool("POST /api/sessions/{key}/handoff", a.handoff)
	tool("POST /api/deliver", a.deliver)
	route("GET /api/sessions/{key}", a.getSession)
	route("GET /api/jobs", a.listJobs)
	route("GET /api/jobs/{id}", a.getJob)
}

// Protect wraps h (a debug or dashboard handler) in the same bearer check: the API token
// only.
func (a *API) Protect(h http.Handler) http.Handler {
	return a.authed(func(w http.ResponseWriter, r *http.Request) error { h.ServeHTTP(w, r); return nil }, false)
}

// apiError is an error with its HTTP status.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func fail(status int, format string, args ...any) error {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// echo is a value from the request as an error may quote it: a few hundred bytes at most.
func echo(v string) string { return voice.Clip(v, voice.EchoLimit) }

// authed checks the bearer token (access.go), then runs h and writes its error, bounded:
// an error may quote the request, and the request may be large.
func (a *API) authed(h func(http.ResponseWriter, *http.Request) error, tools bool) http.Handler {
	keys := a.keys()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, ok := keys.admit(w, r, tools)
		if !ok {
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		err := checkView(r)
		if err == nil {
			err = h(w, r)
		}
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				a.log.Error("api", "path", echo(r.URL.Path), "err", voice.Clip(err.Error(), voice.MessageLimit))
				ae = &apiError{status: http.StatusInternalServerError, msg: "internal error: " + err.Error()}
			}
			writeJSON(w, ae.status, map[string]string{"error": voice.Clip(ae.msg, voice.MessageLimit)})
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// decode reads a JSON body into v, refusing unknown fields so a misspelt one is an error
// rather than silently ignored.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fail(http.StatusBadRequest, "the body is not the expected JSON: %s", echo(err.Error()))
	}
	return nil
}

// callView is a call as the API shows it.
type callView struct {
	ID         voice.CallID `json:"id"`
	Carrier    string       `json:"carrier"`
	CarrierRef string       `json:"carrier_ref,omitempty"`
	Direction  string       `json:"direction"`
	From       string       `json:"from,omitempty"`
	To         string       `json:"to,omitempty"`
	CallerHash string       `json:"caller_hash,omitempty"`
	Caller     string       `json:"caller,omitempty"` // "withheld": the caller withheld their number
	Agent      string       `json:"agent,omitempty"`
	Node       string       `json:"node,omitempty"`
	StartedAt  time.Time    `json:"started_at"`
	EndedAt    *time.Time   `json:"ended_at,omitempty"`
	Outcome    string       `json:"outcome,omitempty"`
	JobID      int64        `json:"job_id,omitempty"`
	Live       bool         `json:"live"`
	// What the call's journal said of it when it ended (store.CallSummary).
	Turns       int    `json:"turns"`
	Interrupted int    `json:"interrupted"`
	Stage       string `json:"stage,omitempty"`
	Problem     string `json:"problem,omitempty"`
}

func (a *API) listCalls(w http.ResponseWriter, r *http.Request) error {
	f, err := callFilter(r.URL.Query()) // callfilter.go
	if err != nil {
		return err
	}
	calls, err := a.o.Store.Calls(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]callView, len(calls))
	for i, c := range calls {
		out[i] = a.viewer(r).call(c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"calls": out, "next": nextPage(f, calls)})
	return nil
}

// callDetail is GET /api/calls/{id}: the call, its transcript, and its journal when this
// node has the file.
type callDetail struct {
	callView
	Transcript []store.TranscriptLine `json:"transcript"`
	Journal    []obs.Event            `json:"journal,omitempty"`
	JournalAt  string                 `json:"journal_at,omitempty"` // where it is, when on another node
}

func (a *API) getCall(w http.ResponseWriter, r *http.Request) error {
	c, err := a.call(r.Context(), voice.CallID(r.PathValue("id")))
	if err != nil {
		return err
	}
	if toolsOnly(r) {
		c.From, c.To = "", "" // raw numbers never reach an agent runtime
	}
	lines, err := a.o.Store.Transcript(r.Context(), c.ID)
	if err != nil {
		return err
	}
	d := callDetail{callView: a.viewer(r).call(c), Transcript: lines}
	if d.Transcript == nil {
		d.Transcript = []store.TranscriptLine{}
	}
	if c.Journal != "" {
		if events, err := obs.ReadFile(c.Journal); err == nil {
			d.Journal = events
		} else {
			d.JournalAt = c.Node + ":" + c.Journal
		}
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (a *API) call(ctx context.Context, id voice.CallID) (store.Call, error) {
	c, err := a.o.Store.Call(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return c, fail(http.StatusNotFound, "there is no call %q", echo(string(id)))
	}
	return c, err
}

// placeRequest is POST /api/calls.
type placeRequest struct {
	To             string `json:"to"`
	From           string `json:"from,omitempty"`
	Message        string `json:"message,omitempty"` // the first thing said when answered
	OnMachine      string `json:"on_machine,omitempty"`
	Attempts       int    `json:"attempts,omitempty"`
	Batch          string `json:"batch,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

func (a *API) placeCall(w http.ResponseWriter, r *http.Request) error {
	var req placeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if toolsOnly(r) {
		if err := a.toolsMayCall(req.To); err != nil {
			return err
		}
	}
	if a.o.CanPlace != nil {
		if err := a.o.CanPlace(); err != nil {
			return fail(http.StatusServiceUnavailable, "this Handset cannot place calls: %v", err)
		}
	}
	if req.Attempts < 0 || req.Attempts > 10 {
		return fail(http.StatusBadRequest, "attempts %d: from 1 to 10", req.Attempts)
	}
	j, err := jobs.QueueCall(r.Context(), a.o.Store,
		jobs.CallJob{To: req.To, From: req.From, FirstMessage: req.Message, OnMachine: req.OnMachine},
		jobs.QueueOptions{DedupeKey: dedupe("call", req.IdempotencyKey), Batch: req.Batch, MaxAttempts: req.Attempts})
	if err := queueError(err); err != nil {
		return err
	}
	a.o.Wake()
	return a.answerJob(w, r, j, "")
}

// queueError maps what QueueCall refused to an API error.
func queueError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jobs.ErrBadRequest):
		return fail(http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), jobs.ErrBadRequest.Error()+": "))
	case errors.Is(err, store.ErrDuplicate):
		return fail(http.StatusConflict, "a request with this idempotency_key was already queued")
	}
	return err
}

func dedupe(kind, key string) string {
	if key == "" {
		return ""
	}
	return kind + ":" + key
}

// answerJob writes a queued job: 202 at once, or with ?wait=DURATION its end (200) or
// its state when the wait ran out (202).
func (a *API) answerJob(w http.ResponseWriter, r *http.Request, j store.Job, note string) error {
	wait := time.Duration(0)
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > 10*time.Minute {
			return fail(http.StatusBadRequest, "wait %q: a duration up to 10m, like 30s", echo(v))
		}
		wait = d
	}
	if wait > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		defer cancel()
		done, err := jobs.Wait(ctx, a.o.Store, j.ID)
		if err == nil {
			writeJSON(w, http.StatusOK, a.viewer(r).job(done))
			return nil
		}
		j = done
	}
	v := a.viewer(r).job(j)
	v.Note = note
	writeJSON(w, http.StatusAccepted, v)
	return nil
}

func (a *API) listJobs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.ListJobs{State: store.JobState(q.Get("state")), Kind: q.Get("kind"), Batch: q.Get("batch")}
	switch f.State {
	case "", store.JobPending, store.JobRunning, store.JobCompleted, store.JobFailed:
	default:
		return fail(http.StatusBadRequest, "state %q: one of pending, running, completed, failed", echo(string(f.State)))
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return fail(http.StatusBadRequest, "limit %q: a whole number from 1 to 1000", echo(v))
		}
		f.Limit = n
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fail(http.StatusBadRequest, "after %q: a job id", echo(v))
		}
		f.After = n
	}
	list, err := a.o.Store.Jobs(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]jobJSON, len(list))
	for i, j := range list {
		out[i] = a.viewer(r).job(j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
	return nil
}

func (a *API) getJob(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return fail(http.StatusBadRequest, "job id %q is not a number", echo(r.PathValue("id")))
	}
	j, err := a.o.Store.Job(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return fail(http.StatusNotFound, "there is no job %d", id)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.viewer(r).job(j))
	return nil
}

// jobJSON is a job as the API shows it.
type jobJSON struct {
	ID        int64           `json:"id"`
	Kind      string          `json:"kind"`
	State     store.JobState  `json:"state"`
	Attempts  int             `json:"attempts"`
	Max       int             `json:"max_attempts"`
	RunAt     time.Time       `json:"run_at"`
	Node      string          `json:"node,omitempty"` // who holds or held it
	Batch     string          `json:"batch,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	Note      string          `json:"note,omitempty"`
}
