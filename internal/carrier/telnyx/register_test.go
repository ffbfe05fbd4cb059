package telnyx

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/voice"
)

// settingsMap is registry.Settings from a map.
type settingsMap map[string]string

func (m settingsMap) Value(env string) string       { return m[env] }
func (m settingsMap) Duration(string) time.Duration { return 0 }
func (m settingsMap) Int(string) int                { return 0 }
func (m settingsMap) Bool(string) bool              { return false }
func (m settingsMap) Source(env string) string      { return "test" }

func TestMount(t *testing.T) {
	pub, _ := newKey(t)
	good := settingsMap{"TELNYX_API_KEY": "KEY1", "TELNYX_PUBLIC_KEY": base64.StdEncoding.EncodeToString(pub),
		"TELNYX_CONNECTION_ID": "conn1", "HANDSET_TELNYX_CODEC": "pcmu"}
	in := carrier.Inbound{Memory: carriertest.NewMemory(), Admit: func(voice.Leg) (<-chan struct{}, error) { return nil, nil }}

	mux := http.NewServeMux()
	if err := Provider.Mount(mux, in, good); err != nil {
		t.Fatalf("mount: %v", err)
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(`{}`)))
	if w.Code != http.StatusForbidden {
		t.Errorf("unsigned webhook: status %d, want 403", w.Code)
	}

	unset := http.NewServeMux()
	if err := Provider.Mount(unset, in, settingsMap{}); err != nil {
		t.Fatalf("mount without settings: %v", err)
	}
	w = httptest.NewRecorder()
	unset.ServeHTTP(w, httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(`{}`)))
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "TELNYX_PUBLIC_KEY") {
		t.Errorf("unconfigured webhook: status %d %q", w.Code, w.Body)
	}

	for name, s := range map[string]settingsMap{
		"short key": {"TELNYX_PUBLIC_KEY": base64.StdEncoding.EncodeToString(pub[:16])},
		"bad codec": {"HANDSET_TELNYX_CODEC": "G729"},
	} {
		if err := Provider.Mount(http.NewServeMux(), in, s); err == nil {
			t.Errorf("%s: mounted", name)
		}
	}
}

func TestProviderSettings(t *testing.T) {
	declared := map[string]bool{}
	for _, s := range Provider.Declares {
		declared[s.Env] = true
	}
	for _, env := range []string{"TELNYX_API_KEY", "TELNYX_PUBLIC_KEY", "TELNYX_CONNECTION_ID", "HANDSET_TELNYX_API_URL", "HANDSET_TELNYX_CODEC"} {
		if !declared[env] {
			t.Errorf("%s is not declared", env)
		}
	}
	for _, s := range Provider.Declares {
		if s.Env == "TELNYX_PUBLIC_KEY" && s.Kind == "secret" {
			t.Error("the public key is declared a secret: it is public")
		}
		if s.Env == "TELNYX_API_KEY" && s.Kind != "secret" {
			t.Error("the API key is not declared a secret")
		}
	}
	all := settingsMap{"TELNYX_API_KEY": "k", "TELNYX_PUBLIC_KEY": "p", "TELNYX_CONNECTION_ID": "c"}
	if !Provider.Configured(all) || Provider.Configured(settingsMap{"TELNYX_API_KEY": "k"}) {
		t.Error("Configured needs all three")
	}
	if !Provider.Started(settingsMap{"TELNYX_CONNECTION_ID": "c"}) || Provider.Started(settingsMap{}) {
		t.Error("Started is any of them")
	}
}

// TestDeclaredSettingsAreSentences: the settings table documents each with its help.
func TestDeclaredSettingsAreSentences(t *testing.T) {
	for _, s := range Provider.Declares {
		if s.Help == "" || !strings.HasSuffix(s.Help, ".") || strings.ToUpper(s.Help[:1]) != s.Help[:1] {
			t.Errorf("%s: help %q is not a sentence", s.Env, s.Help)
		}
	}
}
