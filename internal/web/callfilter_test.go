package web

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// listing is GET /api/calls's answer, as far as these tests read it.
type listing struct {
	Calls []struct {
		ID          string `json:"id"`
		Turns       int    `json:"turns"`
		Interrupted int    `json:"interrupted"`
		Stage       string `json:"stage"`
		Problem     string `json:"problem"`
	} `json:"calls"`
	Next *struct {
		Before   time.Time `json:"before"`
		BeforeID string    `json:"before_id"`
	} `json:"next"`
}

func (r *rig) list(query string) listing {
	r.t.Helper()
	code, data := r.do("GET", "/api/calls?"+query, "Bearer "+apiToken, "")
	if code != 200 {
		r.t.Fatalf("GET /api/calls?%s: %d %s", query, code, data)
	}
	var l listing
	must(r.t, json.Unmarshal(data, &l))
	return l
}

func (l listing) ids() []string {
	var out []string
	for _, c := range l.Calls {
		out = append(out, c.ID)
	}
	return out
}

// TestListCallsFilters: every filter reaches the store, the summary is shown, and the next
// cursor pages through calls started at the same instant.
func TestListCallsFilters(t *testing.T) {
	r := newRig(t, nil)
	ctx := t.Context()
	started := time.Date(2031, 3, 14, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		id := voice.CallID(fmt.Sprintf("c_%d", i))
		must(t, r.st.StartCall(ctx, store.Call{ID: id, Carrier: []string{"twilio", "browser"}[i%2], Direction: voice.Inbound,
			CallerHash: "ch_bob", StartedAt: started.Add(-time.Duration(i/2) * time.Minute)}))
		must(t, r.st.EndCall(ctx, id, started.Add(time.Hour), []string{"caller_hangup", "agent_hangup"}[i%2]))
		must(t, r.st.AppendTranscript(ctx, []store.TranscriptLine{{CallID: id, Turn: 1, Role: voice.RoleUser,
			Text: fmt.Sprintf("call number %d about a Refund", i), At: started}}))
	}
	must(t, r.st.SummarizeCall(ctx, "c_3", store.CallSummary{Turns: 4, Interrupted: 1, Stage: "stt", Problem: "no words heard"}))

	all := []string{"c_1", "c_0", "c_3", "c_2", "c_4"} // newest first, ties by id descending
	cases := []struct {
		query string
		want  []string
	}{
		{"caller_hash=ch_bob", all},
		{"caller_hash=ch_bob&carrier=browser", []string{"c_1", "c_3"}},
		{"caller_hash=ch_bob&outcome=caller_hangup", []string{"c_0", "c_2", "c_4"}},
		{"broken=true", []string{"c_3"}},
		{"live=true", []string{string(liveCall)}},
		{"q=refund%20numb", all},
		{"q=" + url.QueryEscape(`"number* 3" ABOUT(-`), []string{"c_3"}},
		{"since=2031-03-14T12:00:00Z", []string{"c_1", "c_0"}},
		{"caller_hash=ch_bob&before=2031-03-14T12:00:00Z&before_id=c_1", all[1:]},
		{"caller_hash=ch_bob&broken=false&live=false", all},
	}
	for _, tc := range cases {
		if d := cmp.Diff(tc.want, r.list(tc.query).ids()); d != "" {
			t.Errorf("GET /api/calls?%s (-want +got):\n%s", tc.query, d)
		}
	}
	broken := r.list("broken=true").Calls[0]
	if broken.Turns != 4 || broken.Interrupted != 1 || broken.Stage != "stt" || broken.Problem != "no words heard" {
		t.Errorf("the summary shown: %+v", broken)
	}

	var seen []string
	query := "caller_hash=ch_bob&limit=2"
	for range 5 {
		l := r.list(query)
		seen = append(seen, l.ids()...)
		if l.Next == nil {
			break
		}
		query = "caller_hash=ch_bob&limit=2&before=" + url.QueryEscape(l.Next.Before.Format(time.RFC3339Nano)) + "&before_id=" + l.Next.BeforeID
	}
	if d := cmp.Diff(all, seen); d != "" {
		t.Errorf("paging by next (-want +got):\n%s", d)
	}
}

func TestListCallsBadFilters(t *testing.T) {
	r := newRig(t, nil)
	cases := map[string]string{
		"limit=0":                     "limit",
		"limit=501":                   "limit",
		"since=yesterday":             "since",
		"before=2031-13-01T00:00:00Z": "before",
		"before_id=c_1":               "before_id needs before",
		"before=2031-03-14T12:00:00Z&before_id=" + strings.Repeat("x", 200): "before_id",
		"outcome=" + url.QueryEscape("a'b"):                                 "outcome",
		"carrier=" + strings.Repeat("t", 65):                                "carrier",
		"live=maybe":                                                        "live",
		"broken=2":                                                          "broken",
		"q=" + strings.Repeat("refund+", 100):                               "q is",
	}
	for query, want := range cases {
		code, data := r.do("GET", "/api/calls?"+query, "Bearer "+apiToken, "")
		if code != 400 || !strings.Contains(errorOf(data), want) {
			t.Errorf("GET /api/calls?%s = %d %s, want 400 naming %q", voice.Clip(query, 60), code, data, want)
		}
	}
}
