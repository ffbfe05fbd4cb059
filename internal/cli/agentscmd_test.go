package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
)

// runCmd runs one command in-process and returns its exit code and output.
func runCmd(t *testing.T, environ []string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := Main(context.Background(), args, Env{Stdout: &out, Stderr: &out, Environ: environ, WorkDir: t.TempDir()})
	return code, out.String()
}

// TestAgentsCommand: `handset agents` lists the gateway's roster and applies the same
// selection rule as a call: a named agent, the only agent (with a note when it is the
// shared "main"), or a refusal when several exist and none is named.
func TestAgentsCommand(t *testing.T) {
	gateway := func(ids ...string) string {
		var agents []fakeopenclaw.Agent
		for _, id := range ids {
			agents = append(agents, fakeopenclaw.Agent{ID: id, Name: strings.ToUpper(id)})
		}
		gw := fakeopenclaw.New(fakeopenclaw.Options{Token: "gw-token", Agents: agents})
		srv := httptest.NewServer(gw)
		t.Cleanup(func() { gw.Close(); srv.Close() })
		return srv.URL
	}
	several, onlyMain := gateway("main", "support", "billing"), gateway("main")
	cases := []struct {
		name    string
		env     []string
		code    int
		want    []string
		chosen  string
		problem bool
	}{
		{"named", []string{"HANDSET_AGENT_URL=" + several, "OPENCLAW_GATEWAY_TOKEN=gw-token", "HANDSET_AGENT_MODEL=openclaw/support"},
			0, []string{"3 agent(s)", "* support", "Handset uses support (HANDSET_AGENT_MODEL=openclaw/support)"}, "support", false},
		{"several, none named", []string{"HANDSET_AGENT_URL=" + several, "OPENCLAW_GATEWAY_TOKEN=gw-token"},
			1, []string{"Handset would refuse to start", "HANDSET_AGENT_MODEL=openclaw/<agent>"}, "", true},
		{"named but absent", []string{"HANDSET_AGENT_URL=" + several, "OPENCLAW_GATEWAY_TOKEN=gw-token", "HANDSET_AGENT_MODEL=openclaw/sales"},
			1, []string{`agent "sales" is not on the gateway`}, "", true},
		{"only main", []string{"HANDSET_AGENT_URL=" + onlyMain, "OPENCLAW_GATEWAY_TOKEN=gw-token"},
			0, []string{"Handset uses main (the gateway's only agent)", "note: \"main\""}, "main", false},
		{"wrong token", []string{"HANDSET_AGENT_URL=" + several, "OPENCLAW_GATEWAY_TOKEN=nope"},
			1, []string{"refuses the token", "set OPENCLAW_GATEWAY_TOKEN (or HANDSET_AGENT_KEY) to the gateway's token"}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runCmd(t, tc.env, "agents")
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "gw-token") {
				t.Error("the token was printed")
			}
			if tc.code == 1 && !tc.problem {
				return
			}
			_, js := runCmd(t, tc.env, "agents", "--json")
			var rep agentsReport
			if err := json.Unmarshal([]byte(js), &rep); err != nil {
				t.Fatalf("--json: %v\n%s", err, js)
			}
			if rep.Chosen != tc.chosen || (rep.Problem != "") != tc.problem || len(rep.Agents) == 0 {
				t.Errorf("--json report %+v", rep)
			}
		})
	}
}
