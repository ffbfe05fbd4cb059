package config

import (
	"testing"
	"time"
)

func TestValuesReadSettingsByName(t *testing.T) {
	c := Default()
	c.STT.Deepgram.Key = NewSecret("dg-secret")
	c.Agent.Timeout = 45 * time.Second
	c.MaxCalls = 7
	c.Browser = true
	c.TTS.ElevenLabs.Voice = "Rachel"
	cases := []struct{ env, want string }{
		{"DEEPGRAM_API_KEY", "dg-secret"}, // secrets revealed: a provider needs its key
		{"HANDSET_ELEVENLABS_VOICE", "Rachel"},
		{"HANDSET_AGENT_TIMEOUT", "45s"},
		{"HANDSET_NO_SUCH_SETTING", ""},
	}
	for _, tc := range cases {
		if got := c.Value(tc.env); got != tc.want {
			t.Errorf("Value(%s) = %q, want %q", tc.env, got, tc.want)
		}
	}
	if got := c.Duration("HANDSET_AGENT_TIMEOUT"); got != 45*time.Second {
		t.Errorf("Duration = %v", got)
	}
	if got := c.Int("HANDSET_MAX_CALLS"); got != 7 {
		t.Errorf("Int = %d", got)
	}
	if !c.Bool("HANDSET_BROWSER") {
		t.Error("Bool(HANDSET_BROWSER) = false")
	}
	if c.Duration("HANDSET_MAX_CALLS") != 0 || c.Int("HANDSET_AGENT_TIMEOUT") != 0 {
		t.Error("a setting read as another kind is not zero")
	}
	if IsSetting("HANDSET_NO_SUCH_SETTING") || !IsSetting("HANDSET_STT") {
		t.Error("IsSetting is wrong")
	}
}
