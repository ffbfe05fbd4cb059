package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/store"
)

// route is one request the API answers, and what each token gets.
type route struct {
	method, path, body string
	ok                 int  // the status of a request the token may make
	tools              bool // the tools token may make it
}

func routes(r *rig) []route {
	job := "/api/jobs/" + strconv.FormatInt(r.jobID, 10)
	return []route{
		{"GET", "/api/calls", "", 200, false},
		{"GET", "/api/calls?caller_hash=ch_alice", "", 200, false},
		{"GET", "/api/calls/" + string(liveCall), "", 200, true},
		{"GET", "/api/calls/" + string(endedCall), "", 200, true},
		{"POST", "/api/calls", `{"to":"` + alice + `"}`, 202, true},
		{"POST", "/api/calls/" + string(liveCall) + "/transfer", `{"to":"+15550001111"}`, 200, true},
		{"POST", "/api/calls/" + string(liveCall) + "/handoff", `{"channel":"telegram"}`, 200, true},
		{"POST", "/api/sessions/" + sessionKey + "/transfer", `{"to":"+15550001111"}`, 200, true},
		{"POST", "/api/sessions/" + sessionKey + "/handoff", `{"channel":"telegram"}`, 200, true},
		{"POST", "/api/deliver", `{"session_key":"` + sessionKey + `","message":"Your order shipped."}`, 202, true},
		{"GET", "/api/sessions/" + sessionKey, "", 200, false},
		{"GET", "/api/jobs", "", 200, false},
		{"GET", "/api/jobs?kind=outbound_call", "", 200, false},
		{"GET", job, "", 200, false},
		{"GET", "/debug/pprof/", "", 200, false},
	}
}

// The API token opens every route; the tools token only the routes agent tools need, and
// every other answers 403 saying which token it needs; anything else is 401.
func TestEachTokenReachesItsRoutes(t *testing.T) {
	r := newRig(t, nil)
	for _, rt := range routes(r) {
		name := rt.method + " " + rt.path
		if code, data := r.do(rt.method, rt.path, "Bearer "+apiToken, rt.body); code != rt.ok {
			t.Errorf("%s with the API token: %d %s", name, code, data)
		}
		code, data := r.do(rt.method, rt.path, "Bearer "+toolsToken, rt.body)
		switch {
		case rt.tools && code != rt.ok:
			t.Errorf("%s with the tools token: %d %s, want %d", name, code, data, rt.ok)
		case !rt.tools && (code != http.StatusForbidden || !strings.Contains(errorOf(data), "HANDSET_TOOLS_TOKEN") ||
			!strings.Contains(errorOf(data), "needs HANDSET_API_TOKEN")):
			t.Errorf("%s with the tools token: %d %s, want 403 naming the token it needs", name, code, data)
		}
		for _, auth := range []string{"", "Bearer", "Bearer ", apiToken, "Bearer " + apiToken[:len(apiToken)-1],
			"Bearer " + apiToken + "x", "Bearer " + toolsToken[:len(toolsToken)-1] + "X", "bearer " + apiToken,
			"Bearer " + strings.ToUpper(apiToken), "Basic " + apiToken} {
			if code, data := r.do(rt.method, rt.path, auth, rt.body); code != http.StatusUnauthorized {
				t.Errorf("%s with Authorization %q: %d %s, want 401", name, auth, code, data)
			}
		}
	}
}

// Without a tools token configured, no bearer but the API token opens anything: an empty
// token never matches an empty or bare "Bearer".
func TestNoToolsTokenOpensNothing(t *testing.T) {
	r := newRig(t, func(o *Options) { o.ToolsToken = "" })
	for _, rt := range routes(r) {
		for _, auth := range []string{"Bearer ", "Bearer", "", "Bearer " + toolsToken} {
			if code, _ := r.do(rt.method, rt.path, auth, rt.body); code != http.StatusUnauthorized {
				t.Errorf("%s %s with %q: %d, want 401", rt.method, rt.path, auth, code)
			}
		}
	}
	if code, _ := r.do("GET", "/api/calls", "Bearer "+apiToken, ""); code != 200 {
		t.Errorf("the API token: %d", code)
	}
}

// The tools token places calls only to numbers on HANDSET_CALL_ALLOW (empty: none); the API
// token is not limited by it.
func TestToolsTokenCallsOnlyTheAllowList(t *testing.T) {
	r := newRig(t, nil)
	queued := func() int {
		list, err := r.st.Jobs(context.Background(), store.ListJobs{Kind: jobs.KindCall})
		must(t, err)
		return len(list)
	}
	tools, full := "Bearer "+toolsToken, "Bearer "+apiToken
	if code, data := r.do("POST", "/api/calls", tools, `{"to":"+1 (555) 010-2000"}`); code != 202 {
		t.Errorf("a number on the list, written loosely: %d %s", code, data)
	}
	code, data := r.do("POST", "/api/calls", tools, `{"to":"`+stranger+`"}`)
	if code != 403 || !strings.Contains(errorOf(data), stranger+" is not on the outbound allow-list (HANDSET_CALL_ALLOW)") {
		t.Errorf("a number off the list: %d %s", code, data)
	}
	if code, data := r.do("POST", "/api/calls", tools, `{"to":"call my friend"}`); code != 400 || !strings.Contains(errorOf(data), "not a phone number") {
		t.Errorf("not a number: %d %s", code, data)
	}
	if n := queued(); n != 1 {
		t.Errorf("%d calls queued, want the one on the list", n)
	}
	if code, data := r.do("POST", "/api/calls", full, `{"to":"`+stranger+`"}`); code != 202 {
		t.Errorf("the API token to a number off the list: %d %s", code, data)
	}

	none := newRig(t, func(o *Options) { o.CallAllow = nil })
	if code, data := none.do("POST", "/api/calls", tools, `{"to":"`+alice+`"}`); code != 403 || !strings.Contains(errorOf(data), "HANDSET_CALL_ALLOW") {
		t.Errorf("an empty HANDSET_CALL_ALLOW: %d %s", code, data)
	}
}

// A call read with the tools token has no raw numbers (they never reach an agent runtime);
// its hash, transcript and outcome are there. The API token sees the numbers.
func TestToolsTokenReadsACallWithoutNumbers(t *testing.T) {
	r := newRig(t, nil)
	var c struct {
		From, To, CallerHash string
		Transcript           []store.TranscriptLine
		Live                 bool
	}
	read := func(auth string) {
		t.Helper()
		c.From, c.To = "", ""
		code, data := r.do("GET", "/api/calls/"+string(liveCall), auth, "")
		if code != 200 {
			t.Fatalf("%d %s", code, data)
		}
		var raw map[string]any
		must(t, json.Unmarshal(data, &raw))
		c.From, _ = raw["from"].(string)
		c.To, _ = raw["to"].(string)
		c.CallerHash, _ = raw["caller_hash"].(string)
		c.Live, _ = raw["live"].(bool)
		c.Transcript = nil
		tr, _ := json.Marshal(raw["transcript"])
		must(t, json.Unmarshal(tr, &c.Transcript))
	}
	read("Bearer " + toolsToken)
	if c.From != "" || c.To != "" || c.CallerHash != "ch_alice" || !c.Live || len(c.Transcript) != 1 {
		t.Errorf("with the tools token: %+v", c)
	}
	read("Bearer " + apiToken)
	if c.From != "" || c.To != ourNumber {
		t.Errorf("with the API token, default view: %+v", c)
	}
	liveCallAdmin := "/api/calls/" + string(liveCall) + "?view=admin"
	if code, data := r.do("GET", liveCallAdmin, "Bearer "+toolsToken, ""); code != 403 || !strings.Contains(errorOf(data), "HANDSET_API_TOKEN") {
		t.Errorf("the tools token asked for the admin view: %d %s, want 403", code, data)
	}
	code, data := r.do("GET", liveCallAdmin, "Bearer "+apiToken, "")
	var raw map[string]any
	must(t, json.Unmarshal(data, &raw))
	if code != 200 || raw["from"] != alice || raw["to"] != ourNumber {
		t.Errorf("with the API token's admin view: %d %s", code, data)
	}
}

// The check compares whole tokens in constant time: a wrong first byte and a wrong last
// byte cost the same. Run with -bench to see it; the tests above prove what it decides.
func BenchmarkBearerCheck(b *testing.B) {
	a := New(Options{Token: apiToken, ToolsToken: toolsToken})
	keys := a.keys()
	wrongFirst := "Bearer X" + apiToken[1:]
	wrongLast := "Bearer " + apiToken[:len(apiToken)-1] + "X"
	for _, c := range []struct{ name, auth string }{
		{"api", "Bearer " + apiToken}, {"tools", "Bearer " + toolsToken},
		{"wrong_first_byte", wrongFirst}, {"wrong_last_byte", wrongLast},
	} {
		b.Run(c.name, func(b *testing.B) {
			got := []byte(c.auth)
			for b.Loop() {
				_ = matches(got, keys.full)
				_ = matches(got, keys.tools)
			}
		})
	}
}
