package web

import (
	"encoding/json"
	"net/http"

	"github.com/handset-voice/handset/internal/redact"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Views of the API. Answers go to agent tools as much as to people, so by default they name
// the people Handset talks to only by caller hash and session key: a prompt-injected agent
// must not be able to read callers' numbers back. ?view=admin adds the raw numbers.
const (
	viewParam = "view"
	viewAdmin = "admin"
)

// checkView refuses a view nobody offers, so a misspelt "?view=admn" is not silently the
// default. A token that may not see numbers is refused the admin view here too.
func checkView(r *http.Request) error {
	switch v := r.URL.Query().Get(viewParam); v {
	case "":
		return nil
	case viewAdmin:
		if toolsOnly(r) {
			return fail(http.StatusForbidden, "the tools token (HANDSET_TOOLS_TOKEN) never sees raw phone numbers: view=admin needs HANDSET_API_TOKEN")
		}
		return nil
	default:
		return fail(http.StatusBadRequest, "view %q: the only view is admin (raw phone numbers); leave it out for the default view", v)
	}
}

// viewer renders records for one request: with raw numbers (admin) or without.
type viewer struct {
	admin bool
	hash  func(number string) string // the caller hash of a number; nil when unknown
}

func (a *API) viewer(r *http.Request) viewer {
	return viewer{admin: r.URL.Query().Get(viewParam) == viewAdmin && !toolsOnly(r), hash: a.o.CallerHash}
}

// call is a call as the API shows it. The default view leaves out the number of the person
// on the call (the caller, or whom Handset called) and keeps Handset's own line.
func (v viewer) call(c store.Call) callView {
	cv := callView{ID: c.ID, Carrier: c.Carrier, CarrierRef: c.CarrierRef, Direction: string(c.Direction),
		From: c.From, To: c.To, CallerHash: c.CallerHash, Agent: c.Agent, Node: c.Node,
		StartedAt: c.StartedAt, Outcome: c.Outcome, JobID: c.JobID, Live: c.EndedAt.IsZero(),
		Turns: c.Summary.Turns, Interrupted: c.Summary.Interrupted, Stage: c.Summary.Stage, Problem: c.Summary.Problem}
	if !c.EndedAt.IsZero() {
		cv.EndedAt = &c.EndedAt
	}
	if session.Withheld(redact.Person(c)) {
		cv.Caller = string(session.CallerWithheld)
	}
	if !v.admin {
		if c.Direction == voice.Outbound {
			cv.To = ""
		} else {
			cv.From = ""
		}
	}
	return cv
}

// job is a job as the API shows it; the default view as redact.Job says.
func (v viewer) job(j store.Job) jobJSON {
	out := jobJSON{ID: j.ID, Kind: j.Kind, State: j.State, Attempts: j.Attempts, Max: j.MaxAttempts,
		RunAt: j.RunAt, Node: j.LeaseOwner, Batch: j.Batch, Error: j.Error, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt}
	if json.Valid(j.Payload) {
		out.Payload = j.Payload
	}
	if json.Valid(j.Result) {
		out.Result = j.Result
	}
	if v.admin {
		return out
	}
	payload, errMsg := redact.Job(j, v.hash)
	out.Payload, out.Error = nil, errMsg
	if json.Valid(payload) {
		out.Payload = payload
	}
	return out
}
