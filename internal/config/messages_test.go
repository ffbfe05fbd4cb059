package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLongTurnMessage: a slow turn gets a filler by default; since an empty variable
// counts as unset, `off` or `none` (any case) turns it off, as "" in YAML does; any other
// text is spoken as written.
func TestLongTurnMessage(t *testing.T) {
	cases := []struct {
		env  []string
		yaml string
		want string
	}{
		{want: "One moment."},
		{env: []string{"HANDSET_LONG_TURN_MESSAGE="}, want: "One moment."},
		{env: []string{"HANDSET_LONG_TURN_MESSAGE=off"}, want: ""},
		{env: []string{"HANDSET_LONG_TURN_MESSAGE= None "}, want: ""},
		{yaml: "messages:\n  long_turn: \"\"\n", want: ""},
		{env: []string{"HANDSET_LONG_TURN_MESSAGE=Let me check that."}, want: "Let me check that."},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		if tc.yaml != "" {
			if err := os.WriteFile(filepath.Join(dir, DefaultConfigFile), []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		c := mustLoad(t, LoadOptions{WorkDir: dir, Environ: tc.env})
		if got := c.LongTurnMessage(); got != tc.want {
			t.Errorf("env %q yaml %q: filler %q, want %q", tc.env, tc.yaml, got, tc.want)
		}
	}
}

// TestAgentTurnTimeoutDefault: every turn is bounded overall by default, beyond the
// silence limit.
func TestAgentTurnTimeoutDefault(t *testing.T) {
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir()})
	if c.Agent.TurnTimeout != 90*time.Second || c.Agent.Timeout != 60*time.Second {
		t.Errorf("turn timeout %v, silence timeout %v; want 90s and 60s", c.Agent.TurnTimeout, c.Agent.Timeout)
	}
}
