package openclaw_test

import (
	"errors"
	"testing"

	"github.com/handset-voice/handset/internal/agent/openclaw"
)

// TestGatewayURLs: the gateway's address is accepted as ws(s):// or http(s)://, and gives
// the same WebSocket URL and HTTP base either way.
func TestGatewayURLs(t *testing.T) {
	for _, tc := range []struct{ in, ws, http string }{
		{"ws://127.0.0.1:18789", "ws://127.0.0.1:18789", "http://127.0.0.1:18789"},
		{"http://127.0.0.1:18789/", "ws://127.0.0.1:18789", "http://127.0.0.1:18789"},
		{"wss://gw.example.com", "wss://gw.example.com", "https://gw.example.com"},
		{"https://gw.example.com/openclaw/", "wss://gw.example.com/openclaw", "https://gw.example.com/openclaw"},
		{"WSS://gw.example.com:8443", "wss://gw.example.com:8443", "https://gw.example.com:8443"},
	} {
		ws, h, err := openclaw.GatewayURLs(tc.in)
		if err != nil || ws != tc.ws || h != tc.http {
			t.Errorf("GatewayURLs(%q) = %q, %q, %v; want %q, %q", tc.in, ws, h, err, tc.ws, tc.http)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:18789", "ftp://gw.example.com", "ws://", "mailto:x@y"} {
		if _, _, err := openclaw.GatewayURLs(bad); err == nil {
			t.Errorf("GatewayURLs(%q) accepted", bad)
		}
	}
}

// TestSelectAgentSaysWhichRefusal: the two refusals can be told apart (doctor and
// `handset test` give each its own fix).
func TestSelectAgentSaysWhichRefusal(t *testing.T) {
	two := []openclaw.AgentInfo{{ID: "main"}, {ID: "support"}}
	if _, err := openclaw.SelectAgent("", two); !errors.Is(err, openclaw.ErrNoAgentChosen) || errors.Is(err, openclaw.ErrUnknownAgent) {
		t.Errorf("none named among several: %v", err)
	}
	if _, err := openclaw.SelectAgent("openclaw/sales", two); !errors.Is(err, openclaw.ErrUnknownAgent) || errors.Is(err, openclaw.ErrNoAgentChosen) {
		t.Errorf("unknown agent: %v", err)
	}
}

func TestAgentID(t *testing.T) {
	for in, want := range map[string]string{"openclaw/support": "support", "openclaw:support": "support", "support": "support",
		"openclaw": "", "openclaw/default": "", "": ""} {
		if got := openclaw.AgentID(in); got != want {
			t.Errorf("AgentID(%q) = %q, want %q", in, got, want)
		}
	}
}
