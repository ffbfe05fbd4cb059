package config

import (
	"strings"
	"testing"
)

// TestAgentURLWebSocketForOpenClaw: the OpenClaw gateway's address may be written as its
// WebSocket URL; other runtimes are told they need http(s), naming the setting.
func TestAgentURLWebSocketForOpenClaw(t *testing.T) {
	load := func(env ...string) error {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: env})
		return c.Validate(ValidateOptions{RequireAgent: true})
	}
	for _, u := range []string{"ws://127.0.0.1:18789", "wss://gw.example.com", "http://127.0.0.1:18789", "https://gw.example.com/"} {
		if err := load("HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL="+u); err != nil {
			t.Errorf("openclaw at %s refused: %v", u, err)
		}
	}
	for _, runtime := range []string{"hermes", "openai", "webhook"} {
		fe := errorFor(t, load("HANDSET_AGENT="+runtime, "HANDSET_AGENT_URL=ws://127.0.0.1:8642"), "HANDSET_AGENT_URL")
		if !strings.Contains(fe.Reason, "only HANDSET_AGENT=openclaw") || !strings.Contains(fe.Reason, "http:// or https://") {
			t.Errorf("%s with a ws:// URL: %v", runtime, fe)
		}
	}
	for _, bad := range []string{"ftp://127.0.0.1:18789", "127.0.0.1:18789", "ws://127.0.0.1:18789?x=1"} {
		errorFor(t, load("HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL="+bad), "HANDSET_AGENT_URL")
	}
	// Other URL settings still take http(s) only.
	errorFor(t, load("HANDSET_AGENT=openclaw", "HANDSET_PUBLIC_URL=wss://voice.example.com"), "HANDSET_PUBLIC_URL")
}

// TestOpenClawModelDefaultIsDocumentedAsItBehaves: with HANDSET_AGENT_MODEL empty, Handset
// uses the gateway's only agent and refuses to guess among several (the gateway refuses an
// unqualified agent too); the settings table must not promise a default agent that works
// with several.
func TestOpenClawModelDefaultIsDocumentedAsItBehaves(t *testing.T) {
	s := setting(t, "HANDSET_AGENT_MODEL")
	text := s.DefaultText + " " + s.Help
	if strings.Contains(text, "openclaw/main") {
		t.Errorf("HANDSET_AGENT_MODEL's documentation promises openclaw/main: %s", text)
	}
	for _, want := range []string{"only agent", "several"} {
		if !strings.Contains(text, want) {
			t.Errorf("HANDSET_AGENT_MODEL's documentation does not say %q: %s", want, text)
		}
	}
}
