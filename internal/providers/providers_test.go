package providers_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/config"
	_ "github.com/handset-voice/handset/internal/providers"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
	"github.com/handset-voice/handset/internal/voice"
)

// every is each registered provider, of every kind.
func every() []registry.Provider {
	var out []registry.Provider
	out = appendAll[registry.Carrier](out)
	out = appendAll[registry.STT](out)
	out = appendAll[registry.TTS](out)
	out = appendAll[registry.Agent](out)
	return appendAll[registry.VAD](out)
}

func appendAll[P registry.Provider](out []registry.Provider) []registry.Provider {
	for _, p := range registry.All[P]() {
		out = append(out, p)
	}
	return out
}

func label(p registry.Provider) string { return string(p.Kind()) + " " + p.Info().Name }

func TestSettingsAreInTheTable(t *testing.T) {
	for _, p := range every() {
		a := p.Info()
		if a.Title == "" {
			t.Errorf("%s has no title", label(p))
		}
		for i, env := range a.Settings {
			if !config.IsSetting(env) {
				t.Errorf("%s declares %s, which is not in the settings table", label(p), env)
			}
			if slices.Contains(a.Settings[:i], env) {
				t.Errorf("%s declares %s twice", label(p), env)
			}
		}
	}
}

// keyVars are the variables outside the table the configuration documents reading keys from.
var keyVars = []string{config.HermesKeyVar, config.OpenClawKeyVar}

// settingWord finds what reads as a setting's name in advice.
var settingWord = regexp.MustCompile(`\bHANDSET_[A-Z0-9_]+\b|\b[A-Z][A-Z0-9]*_API_KEY\b`)

// The advice `handset diagnose` gives names settings a user can set.
func TestHintsNameSettings(t *testing.T) {
	known := func(env string) bool { return config.IsSetting(env) || slices.Contains(keyVars, env) }
	for _, p := range every() {
		h := p.Info().Hints
		for _, v := range []string{h.KeyVar, h.URLVar} {
			if v != "" && !known(v) {
				t.Errorf("%s: hint variable %s is not a setting", label(p), v)
			}
		}
		for _, text := range []string{h.KeyFix, h.ModelFix, h.SlowFix, h.URLHint, h.NoMediaFix} {
			for _, w := range settingWord.FindAllString(text, -1) {
				if !known(w) {
					t.Errorf("%s: advice names %s, which is not a setting: %q", label(p), w, text)
				}
			}
		}
	}
}

// Every value the configuration accepts for a choosing setting is a registered provider of
// its kind, and every registered provider is such a value.
func TestChoicesAreTheRegisteredProviders(t *testing.T) {
	choosing := map[string]registry.Kind{
		"HANDSET_STT": registry.KindSTT, "HANDSET_STT_FALLBACK": registry.KindSTT,
		"HANDSET_TTS": registry.KindTTS, "HANDSET_TTS_FALLBACK": registry.KindTTS,
		"HANDSET_VAD": registry.KindVAD, registry.CarrierChoice: registry.KindCarrier,
	}
	for _, s := range config.Settings() {
		kind, ok := choosing[s.Env]
		if !ok {
			continue
		}
		names := registry.Names(kind)
		if !slices.Equal(slices.Sorted(slices.Values(s.Allowed)), slices.Sorted(slices.Values(names))) {
			t.Errorf("%s accepts %v, but the %s providers registered are %v", s.Env, s.Allowed, kind, names)
		}
	}
}

// A provider reads only the settings it declares, building for calls and checking for
// doctor alike: its declaration is what the documentation and `handset config` trust.
func TestProvidersReadOnlyWhatTheyDeclare(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":"no key is good here"}`, http.StatusUnauthorized)
	}))
	t.Cleanup(refuse.Close)
	engines, _ := vadtest.EnginesDir()
	engineFile := func(name string) (string, error) {
		f := filepath.Join(engines, name)
		_, err := os.Stat(f)
		return f, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	for _, p := range every() {
		a := p.Info()
		// Every address a provider reads is the local server that refuses, so no check
		// leaves this machine.
		over := map[string]string{}
		for _, env := range a.Settings {
			if strings.HasSuffix(env, "_URL") {
				over[env] = refuse.URL
			}
		}
		cfg, err := config.Load(config.LoadOptions{WorkDir: t.TempDir(), Environ: []string{}, Overrides: over})
		if err != nil {
			t.Fatalf("%s: %v", label(p), err)
		}
		rec := &registrytest.Recorder{Settings: cfg}
		build := registry.Build{Settings: rec, Choice: "HANDSET_TEST", Log: log, HTTP: refuse.Client(), EngineFile: engineFile}
		switch p := p.(type) {
		case registry.Carrier:
			p.Configured(rec)
			p.Started(rec)
			_, _ = p.New(build)
			_ = p.Mount(http.NewServeMux(), carrier.Inbound{Memory: carriertest.NewMemory(), Logger: log}, rec)
			if _, err := p.Numbers.Open(rec); err != nil {
				_ = p.Numbers.Explain(rec, err)
			}
			_ = p.Numbers.Explain(rec, &voice.ProviderError{Kind: voice.KindAuth, Err: errors.New("refused")})
			p.Numbers.AccountID(rec)
		case registry.STT:
			r, _ := p.New(build)
			release(r)
		case registry.TTS:
			s, _ := p.New(build)
			release(s)
		case registry.Agent:
			ag, _ := p.New(build)
			release(ag)
		case registry.VAD:
			if newDetector, free, err := p.New(build); err == nil {
				if d, err := newDetector(8000); err == nil {
					release(d)
				}
				free()
			}
		}
		if a.Checks != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			probe := registry.Probe{Settings: rec, Section: string(p.Kind()), Choice: "HANDSET_TEST",
				HTTP: func(string) *http.Client { return refuse.Client() }, EngineFile: engineFile, Home: t.TempDir()}
			for _, c := range a.Checks(probe) {
				c.Run(ctx)
			}
			cancel()
		}
		for _, env := range rec.Read() {
			if !slices.Contains(a.Settings, env) {
				t.Errorf("%s reads %s, which its Settings do not declare", label(p), env)
			}
		}
	}
}

// release frees what a built provider holds.
func release(x any) {
	if c, ok := x.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// Built from its settings, the energy detector ends speech after the silence
// HANDSET_VAD_END says.
func TestEnergyVADBuiltFromSettingsEndsSpeechAsSet(t *testing.T) {
	energy, ok := registry.Find[registry.VAD]("energy")
	if !ok {
		t.Fatal("no energy VAD in the catalogue")
	}
	vadtest.CheckEndSetting(t, func(end time.Duration) vad.Detector {
		newDetector, free, err := energy.New(registry.Build{Settings: registrytest.Settings{"HANDSET_VAD_START": "60ms", "HANDSET_VAD_END": end.String()},
			Choice: "HANDSET_VAD", Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(free)
		d, err := newDetector(16000)
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}

// Every carrier serves its calls' routes and says what the number commands need: the
// gateway and the commands call these without asking.
// A carrier's declared settings and the ones it requires together are settings it says it
// reads, and the table has them.
func TestCarriersDeclareTheirSettings(t *testing.T) {
	for _, c := range registry.All[registry.Carrier]() {
		for _, d := range c.Declares {
			if !slices.Contains(c.Settings, d.Env) || !config.IsSetting(d.Env) {
				t.Errorf("carrier %s declares %s, which is not among its Settings or not in the table", c.Name, d.Env)
			}
		}
		for _, group := range c.RequireTogether {
			for _, env := range group {
				if !slices.Contains(c.Settings, env) {
					t.Errorf("carrier %s requires %s with %v, which is not among its Settings", c.Name, env, group)
				}
			}
		}
	}
}

func TestCarriersHaveAnInboundSideAndNumbers(t *testing.T) {
	for _, c := range registry.All[registry.Carrier]() {
		n := c.Numbers
		if c.Mount == nil || n.Open == nil || n.Explain == nil || n.AccountID == nil || n.Webhooks.Same == nil {
			t.Errorf("carrier %s lacks Mount, or Numbers' Open, Explain, AccountID or Webhooks.Same", c.Name)
		}
		if c.Configured == nil || c.Started == nil || c.New == nil || c.AccountSettings == "" || c.PhoneSetup == "" {
			t.Errorf("carrier %s lacks Configured, Started or New, or the words for its set-up", c.Name)
		}
		if n.Override == "" || n.Console == "" || n.BuyNumbers == "" {
			t.Errorf("carrier %s: words %q %q %q missing", c.Name, n.Override, n.Console, n.BuyNumbers)
		}
		if c.Listen != nil {
			continue // its calls come to its own listeners (a SIP trunk): no webhooks to sign
		}
		if !strings.HasPrefix(n.Webhooks.VoicePath, "/") || !strings.HasPrefix(n.Webhooks.StatusPath, "/") || n.SignatureHeader == "" {
			t.Errorf("carrier %s: webhooks %+v or signature header %q missing", c.Name, n.Webhooks, n.SignatureHeader)
		}
	}
}
