package cli

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// GET /metrics counts calls and turns and times every outbound frame against its schedule.
func TestMetricsCountCallsTurnsAndFrames(t *testing.T) {
	r := startServe(t, []string{"what are your hours"})
	callerTurns(context.Background(), t, r, alice, 1, 0)
	r.journal() // the call has ended
	// The journal's last line is written before the server counts the end (its goroutine
	// waits on the call's Done): scrape until the count has caught up.
	ended := regexp.MustCompile(`(?m)^handset_calls_ended_total\{[^}]*\} 1$`)
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(r.baseURL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if ended.Match(body) || time.Now().After(deadline) {
			break
		}
	}
	value := func(series string) float64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+-]+)$`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("no %s in /metrics:\n%s", series, body)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	checks := []struct {
		series string
		ok     func(float64) bool
	}{
		{`handset_calls_started_total{carrier="twilio",direction="inbound"}`, func(v float64) bool { return v == 1 }},
		{`handset_calls_ended_total{reason="caller_hangup"}`, func(v float64) bool { return v == 1 }},
		{"handset_calls_active", func(v float64) bool { return v == 0 }},
		{"handset_turns_total", func(v float64) bool { return v == 1 }},
		{"handset_turn_overhead_seconds_count", func(v float64) bool { return v == 1 }},
		{"handset_playout_frames_total", func(v float64) bool { return v > 10 }}, // greeting and reply
		{"handset_playout_lateness_seconds_count", func(v float64) bool { return v == value("handset_playout_frames_total") }},
		{"go_goroutines", func(v float64) bool { return v > 0 }},
	}
	for _, c := range checks {
		if v := value(c.series); !c.ok(v) {
			t.Errorf("%s = %v", c.series, v)
		}
	}
}

const (
	profToken  = "prof-token-0123456789abcdef0123456789"
	toolsToken = "tools-token-0123456789abcdef012345678"
)

// Profiles are served behind the API token: nobody without it can read the heap, not
// even the agent tools' token.
func TestPprofNeedsTheToken(t *testing.T) {
	r := startServe(t, nil, "HANDSET_API_TOKEN="+profToken, "HANDSET_TOOLS_TOKEN="+toolsToken)
	get := func(token string) int {
		req, _ := http.NewRequest("GET", r.baseURL()+"/debug/pprof/heap?gc=1", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code := get("wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	if code := get(toolsToken); code != http.StatusForbidden {
		t.Errorf("the tools token: %d", code)
	}
	if code := get(profToken); code != http.StatusOK {
		t.Errorf("the token: %d", code)
	}
}
