package web

import (
	"context"
	"crypto/subtle"
	"net/http"

	"github.com/handset-voice/handset/internal/jobs"
)

// Two bearer tokens open the API. HANDSET_API_TOKEN opens every route. HANDSET_TOOLS_TOKEN,
// kept in an agent runtime's tool configuration, opens only what its tools need:
// deliveries, transfers (within HANDSET_TRANSFER_ALLOW) and handoffs, one call by its id,
// and outbound calls to numbers on HANDSET_CALL_ALLOW. A runtime that is misled or broken
// into cannot list calls, read sessions or jobs, profile the server, or call anyone else.

// toolsScope marks a request admitted with the tools token.
type toolsScope struct{}

// toolsOnly reports whether r came with the tools token rather than the API token.
func toolsOnly(r *http.Request) bool { return r.Context().Value(toolsScope{}) != nil }

// bearers are the two Authorization values the API accepts; empty tokens match nothing.
type bearers struct {
	full, tools []byte
}

func (a *API) keys() bearers {
	var b bearers
	if a.o.Token != "" {
		b.full = []byte("Bearer " + a.o.Token)
	}
	if a.o.ToolsToken != "" {
		b.tools = []byte("Bearer " + a.o.ToolsToken)
	}
	return b
}

// matches compares in constant time (for a given length); nil never matches.
func matches(got, want []byte) bool {
	return want != nil && subtle.ConstantTimeCompare(got, want) == 1
}

// admit checks r's bearer token: the API token passes, the tools token passes where tools
// is true (marked in the returned request's context), anything else is answered here.
func (b bearers) admit(w http.ResponseWriter, r *http.Request, tools bool) (*http.Request, bool) {
	got := []byte(r.Header.Get("Authorization"))
	// Both compared every time, so timing does not say which token came close.
	full, limited := matches(got, b.full), matches(got, b.tools)
	switch {
	case full:
		return r, true
	case limited && tools:
		return r.WithContext(context.WithValue(r.Context(), toolsScope{}, true)), true
	case limited:
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "the tools token (HANDSET_TOOLS_TOKEN) cannot " +
			r.Method + " " + echo(r.URL.Path) + ": it may only deliver (POST /api/deliver), transfer and hand off calls " +
			"(POST …/transfer, …/handoff), read one call by its id (GET /api/calls/{id}) and place calls to numbers on " +
			"HANDSET_CALL_ALLOW (POST /api/calls); everything else needs HANDSET_API_TOKEN"})
		return r, false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="handset"`)
	writeJSON(w, http.StatusUnauthorized, map[string]string{
		"error": "missing or wrong bearer token: send Authorization: Bearer <HANDSET_API_TOKEN> (generated into the data dir's api-token file when not set), or HANDSET_TOOLS_TOKEN for the routes agent tools use"})
	return r, false
}

// toolsMayCall is the tools token's rule for POST /api/calls: only numbers on
// HANDSET_CALL_ALLOW, so a misled agent cannot call premium-rate numbers or strangers.
func (a *API) toolsMayCall(to string) error {
	checked, err := jobs.QueueCallCheck(jobs.CallJob{To: to})
	if err != nil {
		return queueError(err)
	}
	if !a.o.CallAllow.Allows(checked.To) {
		return fail(http.StatusForbidden, "%s is not on the outbound allow-list (HANDSET_CALL_ALLOW): the tools token may only call the numbers there", checked.To)
	}
	return nil
}
