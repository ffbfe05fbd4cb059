// Package web serves Handset's HTTP API under /api, behind the bearer HANDSET_API_TOKEN:
// calls with their transcripts and journals, outbound calls and dialer progress as jobs,
// transfers and channel handoffs of live calls, and callback deliveries. Every answer is
// JSON; every error says what to fix.
package web

import (
	"context"
	"crypto/subtle"
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
	Token    string // HANDSET_API_TOKEN
	Store    store.Store
	Channels map[string]jobs.Channel // what can deliver later, by carrier name
	Wake     func()                  // this node's job runner: a job was queued
	CanPlace func() error            // nil when this node can place outbound calls
	Logger   *slog.Logger
	// LiveWait is how long a transfer or handoff request waits for its job (default 10s).
	LiveWait time.Duration
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

// Register mounts the routes.
func (a *API) Register(mux *http.ServeMux) {
	route := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		mux.Handle(pattern, a.authed(h))
	}
	route("GET /api/calls", a.listCalls)
	route("GET /api/calls/{id}", a.getCall)
	route("POST /api/calls", a.placeCall)
	route("POST /api/calls/{id}/transfer", a.transfer)
	route("POST /api/calls/{id}/handoff", a.handoff)
	route("POST /api/sessions/{key}/transfer", a.transfer)
	route("POST /api/sessions/{key}/handoff", a.handoff)
	route("POST /api/deliver", a.deliver)
	route("GET /api/sessions/{key}", a.getSession)
	route("GET /api/jobs", a.listJobs)
	route("GET /api/jobs/{id}", a.getJob)
}

// Protect wraps h (a debug or dashboard handler) in the same bearer check.
func (a *API) Protect(h http.Handler) http.Handler {
	return a.authed(func(w http.ResponseWriter, r *http.Request) error { h.ServeHTTP(w, r); return nil })
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

// authed checks the bearer token in constant time, then runs h and writes its error.
func (a *API) authed(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	want := []byte("Bearer " + a.o.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if a.o.Token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="handset"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{
				"error": "missing or wrong bearer token: send Authorization: Bearer <HANDSET_API_TOKEN> (generated into the data dir's api-token file when not set)"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := h(w, r); err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				a.log.Error("api", "path", r.URL.Path, "err", err)
				ae = &apiError{status: http.StatusInternalServerError, msg: "internal error: " + err.Error()}
			}
			writeJSON(w, ae.status, map[string]string{"error": ae.msg})
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
		return fail(http.StatusBadRequest, "the body is not the expected JSON: %v", err)
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
	Agent      string       `json:"agent,omitempty"`
	Node       string       `json:"node,omitempty"`
	StartedAt  time.Time    `json:"started_at"`
	EndedAt    *time.Time   `json:"ended_at,omitempty"`
	Outcome    string       `json:"outcome,omitempty"`
	JobID      int64        `json:"job_id,omitempty"`
	Live       bool         `json:"live"`
}

func (a *API) view(c store.Call) callView {
	v := callView{ID: c.ID, Carrier: c.Carrier, CarrierRef: c.CarrierRef, Direction: string(c.Direction),
		From: c.From, To: c.To, CallerHash: c.CallerHash, Agent: c.Agent, Node: c.Node,
		StartedAt: c.StartedAt, Outcome: c.Outcome, JobID: c.JobID, Live: c.EndedAt.IsZero()}
	if !c.EndedAt.IsZero() {
		v.EndedAt = &c.EndedAt
	}
	return v
}

func (a *API) listCalls(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.ListCalls{CallerHash: q.Get("caller_hash")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return fail(http.StatusBadRequest, "limit %q: a whole number from 1 to 500", v)
		}
		f.Limit = n
	}
	if v := q.Get("before"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return fail(http.StatusBadRequest, "before %q: an RFC 3339 time, like 2026-11-25T15:00:00Z", v)
		}
		f.Before = t
	}
	calls, err := a.o.Store.Calls(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]callView, len(calls))
	for i, c := range calls {
		out[i] = a.view(c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"calls": out})
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
	lines, err := a.o.Store.Transcript(r.Context(), c.ID)
	if err != nil {
		return err
	}
	d := callDetail{callView: a.view(c), Transcript: lines}
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
		return c, fail(http.StatusNotFound, "there is no call %q", id)
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
			return fail(http.StatusBadRequest, "wait %q: a duration up to 10m, like 30s", v)
		}
		wait = d
	}
	if wait > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		defer cancel()
		done, err := jobs.Wait(ctx, a.o.Store, j.ID)
		if err == nil {
			writeJSON(w, http.StatusOK, jobView(done))
			return nil
		}
		j = done
	}
	v := jobView(j)
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
		return fail(http.StatusBadRequest, "state %q: one of pending, running, completed, failed", f.State)
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return fail(http.StatusBadRequest, "limit %q: a whole number from 1 to 1000", v)
		}
		f.Limit = n
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fail(http.StatusBadRequest, "after %q: a job id", v)
		}
		f.After = n
	}
	list, err := a.o.Store.Jobs(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]jobJSON, len(list))
	for i, j := range list {
		out[i] = jobView(j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
	return nil
}

func (a *API) getJob(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return fail(http.StatusBadRequest, "job id %q is not a number", r.PathValue("id"))
	}
	j, err := a.o.Store.Job(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return fail(http.StatusNotFound, "there is no job %d", id)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, jobView(j))
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

func jobView(j store.Job) jobJSON {
	v := jobJSON{ID: j.ID, Kind: j.Kind, State: j.State, Attempts: j.Attempts, Max: j.MaxAttempts,
		RunAt: j.RunAt, Node: j.LeaseOwner, Batch: j.Batch, Error: j.Error, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt}
	if json.Valid(j.Payload) {
		v.Payload = j.Payload
	}
	if json.Valid(j.Result) {
		v.Result = j.Result
	}
	return v
}
