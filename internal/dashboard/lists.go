package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/redact"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Rows per page of each list.
const (
	callsPerPage    = 50
	jobsPerPage     = 50
	sessionsPerPage = 50
	batchesShown    = 20
	maxParam        = 200 // the longest filter value taken
)

// caller is how v sees the person on call c: the number for an admin, the caller hash for
// a viewer, "withheld" when there is no number.
func (v viewer) caller(c store.Call) string {
	person := redact.Person(c)
	switch {
	case person == "" || session.Withheld(person):
		return "withheld"
	case v.admin:
		return person
	case c.CallerHash != "":
		return c.CallerHash
	}
	return "no caller hash" // a number not trusted enough to be remembered
}

// callRow is one call in a list.
type callRow struct {
	ID                                 voice.CallID
	Started                            time.Time
	Direction, Carrier, Caller         string
	Duration                           time.Duration
	Live                               bool
	Turns, Interrupted                 int
	Outcome, BrokenStage, BrokenReason string
}

func (v viewer) callRow(c store.Call, now time.Time) callRow {
	row := callRow{ID: c.ID, Started: c.StartedAt, Direction: string(c.Direction), Carrier: c.Carrier, Caller: v.caller(c),
		Live: c.EndedAt.IsZero(), Turns: c.Summary.Turns, Interrupted: c.Summary.Interrupted, Outcome: c.Outcome,
		BrokenStage: c.Summary.Stage, BrokenReason: c.Summary.Problem}
	if row.Live {
		row.Duration = now.Sub(c.StartedAt)
	} else {
		row.Duration = c.EndedAt.Sub(c.StartedAt)
	}
	return row
}

// badParam is a query parameter the page cannot use.
type badParam struct{ msg string }

func (e badParam) Error() string { return e.msg }

// param is a query parameter, refused when longer than maxParam.
func param(q url.Values, name string) (string, error) {
	v := strings.TrimSpace(q.Get(name))
	if len(v) > maxParam {
		return "", badParam{fmt.Sprintf("%s is longer than %d characters", name, maxParam)}
	}
	return v, nil
}

// dayParam reads a date (2026-05-05, UTC); zero when absent.
func dayParam(q url.Values, name string) (time.Time, error) {
	v, err := param(q, name)
	if err != nil || v == "" {
		return time.Time{}, err
	}
	t, err := time.Parse("2006-01-02", v)
	if err != nil {
		return time.Time{}, badParam{fmt.Sprintf("%s %s is not a date such as 2026-05-05", name, quote(v))}
	}
	return t, nil
}

// instantParam reads a paging position (RFC 3339 with nanoseconds).
func instantParam(q url.Values, name string) (time.Time, error) {
	v, err := param(q, name)
	if err != nil || v == "" {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, badParam{fmt.Sprintf("%s %s is not a time such as 2026-05-05T10:00:00Z", name, quote(v))}
	}
	return t, nil
}

// callFilter is the calls page's form as the store's filter, and as the form shows it back.
type callFilter struct {
	Since, Until, Outcome, Carrier, Text string
	Live, Broken                         bool
	list                                 store.ListCalls
}

func readCallFilter(q url.Values) (callFilter, error) {
	var f callFilter
	var err error
	for name, dst := range map[string]*string{"outcome": &f.Outcome, "carrier": &f.Carrier, "q": &f.Text} {
		if *dst, err = param(q, name); err != nil {
			return f, err
		}
	}
	since, err := dayParam(q, "since")
	if err != nil {
		return f, err
	}
	until, err := dayParam(q, "until")
	if err != nil {
		return f, err
	}
	before, err := instantParam(q, "before")
	if err != nil {
		return f, err
	}
	beforeID, err := param(q, "before_id")
	if err != nil {
		return f, err
	}
	f.Live, f.Broken = q.Get("live") != "", q.Get("broken") != ""
	if !since.IsZero() {
		f.Since = since.Format("2006-01-02")
	}
	f.list = store.ListCalls{Since: since, Outcome: f.Outcome, Carrier: f.Carrier, Text: f.Text,
		Live: f.Live, Broken: f.Broken, Limit: callsPerPage + 1}
	if !until.IsZero() {
		f.Until = until.Format("2006-01-02")
		f.list.Before = until.AddDate(0, 0, 1) // the whole day
	}
	if !before.IsZero() && (f.list.Before.IsZero() || before.Before(f.list.Before)) {
		f.list.Before, f.list.BeforeID = before, voice.CallID(beforeID)
	}
	return f, nil
}

// query is the filter as a query string, with extra parameters (paging) set.
func (f callFilter) query(extra ...string) string {
	q := url.Values{}
	for name, v := range map[string]string{"since": f.Since, "until": f.Until, "outcome": f.Outcome, "carrier": f.Carrier, "q": f.Text} {
		if v != "" {
			q.Set(name, v)
		}
	}
	if f.Live {
		q.Set("live", "1")
	}
	if f.Broken {
		q.Set("broken", "1")
	}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return q.Encode()
}

func (d *Dashboard) callsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	f, err := readCallFilter(r.URL.Query())
	if err != nil {
		d.problem(w, r, v, http.StatusBadRequest, err.Error())
		return
	}
	calls, err := d.o.Source.Calls(r.Context(), f.list)
	if err != nil {
		d.storeFailed(w, r, v, err)
		return
	}
	var older string
	if len(calls) > callsPerPage {
		calls = calls[:callsPerPage]
		last := calls[len(calls)-1]
		older = "/dashboard?" + f.query("before", last.StartedAt.UTC().Format(time.RFC3339Nano), "before_id", string(last.ID))
	}
	now := d.o.Now()
	rows := make([]callRow, len(calls))
	for i, c := range calls {
		rows[i] = v.callRow(c, now)
	}
	d.render(w, r, http.StatusOK, "calls", v, map[string]any{"Title": "Calls", "Calls": rows, "Filter": f,
		"Older": older, "Paged": !f.list.Before.IsZero() && f.Until == "" || f.list.BeforeID != ""})
}

// jobRow is one job as v may see it.
type jobRow struct {
	store.Job
	Delivery bool // an outbound call that delivers a message
	Shown    string
	ErrText  string
}

func (v viewer) jobRow(j store.Job, hash func(string) string) jobRow {
	payload, errMsg := j.Payload, j.Error
	if !v.admin {
		payload, errMsg = redact.Job(j, hash)
	}
	var fields struct {
		Deliver bool `json:"deliver"`
	}
	_ = json.Unmarshal(j.Payload, &fields)
	return jobRow{Job: j, Shown: voice.Clip(string(payload), 600), ErrText: errMsg, Delivery: fields.Deliver}
}

// jobKinds are the kinds the jobs page filters by.
var jobKinds = []string{"outbound_call", "transfer", "handoff"}

func (d *Dashboard) jobsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	kind, err := param(q, "kind")
	if err == nil && kind != "" && !slices.Contains(jobKinds, kind) {
		err = badParam{"kind " + quote(kind) + " is none of " + strings.Join(jobKinds, ", ")}
	}
	var before int64
	if raw, _ := param(q, "before"); err == nil && raw != "" {
		if before, err = strconv.ParseInt(raw, 10, 64); err != nil || before <= 0 {
			err = badParam{"before " + quote(raw) + " is not a job id"}
		}
	}
	if err != nil {
		d.problem(w, r, v, http.StatusBadRequest, err.Error())
		return
	}
	batches, err := d.o.Source.Batches(r.Context(), batchesShown)
	if err != nil {
		d.storeFailed(w, r, v, err)
		return
	}
	jobs, err := d.o.Source.Jobs(r.Context(), store.ListJobs{Kind: kind, Newest: true, Before: before, Limit: jobsPerPage + 1})
	if err != nil {
		d.storeFailed(w, r, v, err)
		return
	}
	var older string
	if len(jobs) > jobsPerPage {
		jobs = jobs[:jobsPerPage]
		oq := url.Values{"before": {strconv.FormatInt(jobs[len(jobs)-1].ID, 10)}}
		if kind != "" {
			oq.Set("kind", kind)
		}
		older = "/dashboard/jobs?" + oq.Encode()
	}
	rows := make([]jobRow, len(jobs))
	for i, j := range jobs {
		rows[i] = v.jobRow(j, d.o.CallerHash)
	}
	d.render(w, r, http.StatusOK, "jobs", v, map[string]any{"Title": "Jobs", "Batches": batches, "Jobs": rows,
		"Kinds": jobKinds, "Kind": kind, "Older": older, "Paged": before != 0})
}

func (d *Dashboard) sessionsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	before, err := instantParam(q, "before")
	var hash string
	if err == nil {
		hash, err = param(q, "before_hash")
	}
	if err != nil {
		d.problem(w, r, v, http.StatusBadRequest, err.Error())
		return
	}
	list, err := d.o.Source.Sessions(r.Context(), store.ListSessions{Before: before, BeforeHash: hash, Limit: sessionsPerPage + 1})
	if err != nil {
		d.storeFailed(w, r, v, err)
		return
	}
	var older string
	if len(list) > sessionsPerPage {
		list = list[:sessionsPerPage]
		last := list[len(list)-1]
		older = "/dashboard/sessions?" + url.Values{"before": {last.LastSeen.UTC().Format(time.RFC3339Nano)}, "before_hash": {last.CallerHash}}.Encode()
	}
	d.render(w, r, http.StatusOK, "sessions", v, map[string]any{"Title": "Sessions", "Sessions": list, "Older": older, "Paged": !before.IsZero()})
}
