package plivo_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMount(t *testing.T) {
	good := settingsMap{"PLIVO_AUTH_ID": "MAZDQ1ZJIYMDZKMTAYNM", "PLIVO_AUTH_TOKEN": "token1", "HANDSET_PLIVO_CODEC": "L16"}
	in := carrier.Inbound{Memory: carriertest.NewMemory(), Admit: func(voice.Leg) (<-chan struct{}, error) { return nil, nil }}
	form := "CallUUID=6b1d3c5e-0000-4000-8000-000000000001&From=15550001111&To=15550002222"
	post := func(mux *http.ServeMux, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		mux.ServeHTTP(w, r)
		return w
	}

	mux := http.NewServeMux()
	if err := plivo.Provider.Mount(mux, in, good); err != nil {
		t.Fatalf("mount: %v", err)
	}
	for _, path := range []string{plivo.AnswerPath, plivo.HangupPath, plivo.MachinePath, plivo.StreamStatusPath, plivo.TransferPath} {
		if w := post(mux, path); w.Code != http.StatusForbidden {
			t.Errorf("unsigned %s: status %d, want 403", path, w.Code)
		}
	}

	unset := http.NewServeMux()
	if err := plivo.Provider.Mount(unset, in, settingsMap{}); err != nil {
		t.Fatalf("mount without settings: %v", err)
	}
	for _, path := range []string{plivo.AnswerPath, plivo.HangupPath} {
		if w := post(unset, path); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "PLIVO_AUTH_TOKEN") {
			t.Errorf("unconfigured %s: status %d %q", path, w.Code, w.Body)
		}
	}
	w := httptest.NewRecorder()
	unset.ServeHTTP(w, httptest.NewRequest(http.MethodGet, plivo.StreamPath, nil))
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("unconfigured stream: status %d", w.Code)
	}

	for name, s := range map[string]settingsMap{
		"bad codec":   {"HANDSET_PLIVO_CODEC": "opus"},
		"bad auth id": {"PLIVO_AUTH_ID": "nope", "PLIVO_AUTH_TOKEN": "t"},
	} {
		if err := plivo.Provider.Mount(http.NewServeMux(), in, s); err == nil {
			t.Errorf("%s: mounted", name)
		}
	}
}

func TestProviderSettings(t *testing.T) {
	declared := map[string]string{}
	for _, s := range plivo.Provider.Declares {
		declared[s.Env] = string(s.Kind)
		if s.Help == "" || !strings.HasSuffix(s.Help, ".") || strings.ToUpper(s.Help[:1]) != s.Help[:1] {
			t.Errorf("%s: help %q is not a sentence", s.Env, s.Help)
		}
	}
	for _, env := range []string{"PLIVO_AUTH_ID", "PLIVO_AUTH_TOKEN", "PLIVO_APP_ID", "HANDSET_PLIVO_API_URL", "HANDSET_PLIVO_CODEC"} {
		if _, ok := declared[env]; !ok {
			t.Errorf("%s is not declared", env)
		}
	}
	if declared["PLIVO_AUTH_TOKEN"] != "secret" || declared["PLIVO_AUTH_ID"] == "secret" {
		t.Errorf("secrets: %v", declared)
	}
	both := settingsMap{"PLIVO_AUTH_ID": "i", "PLIVO_AUTH_TOKEN": "t"}
	if !plivo.Provider.Configured(both) || plivo.Provider.Configured(settingsMap{"PLIVO_AUTH_ID": "i"}) {
		t.Error("Configured needs the id and the token")
	}
	if !plivo.Provider.Started(settingsMap{"PLIVO_APP_ID": "1"}) || plivo.Provider.Started(settingsMap{}) {
		t.Error("Started is any of them")
	}
	if w := plivo.Provider.Numbers.Webhooks; w.VoicePath != plivo.AnswerPath || w.StatusPath != plivo.HangupPath {
		t.Errorf("webhooks %+v", w)
	}
}

// TestDrainingRefusesNewCalls: a draining node answers a signed answer request 503, so
// Plivo tries the application's fallback; it takes the call once it stops draining.
func TestDrainingRefusesNewCalls(t *testing.T) {
	const token = "drainToken1"
	var draining atomic.Bool
	draining.Store(true)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	plivo.New(plivo.Options{AuthToken: token, PublicURL: srv.URL, Memory: carriertest.NewMemory(),
		Draining: draining.Load}).Register(mux)
	answer := func() int {
		form := url.Values{"CallUUID": {"6b1d3c5e-0000-4000-8000-000000000002"}, "From": {"15550001111"}, "To": {"15550002222"}, "Direction": {"inbound"}}
		nonce := "12345678901234567890" + strconv.FormatBool(draining.Load())
		req, _ := http.NewRequest(http.MethodPost, srv.URL+plivo.AnswerPath, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set(plivo.NonceHeader, nonce)
		req.Header.Set(plivo.SignatureHeader, plivosim.SignV3(token, srv.URL+plivo.AnswerPath, form, nonce))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := answer(); got != http.StatusServiceUnavailable {
		t.Errorf("while draining: %d, want 503", got)
	}
	draining.Store(false)
	if got := answer(); got != http.StatusOK {
		t.Errorf("after draining: %d, want 200", got)
	}
}
