package plivo

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Where the settings are found, for hints.
const (
	// ConsoleKeys is where the Auth ID and Auth Token are.
	ConsoleKeys = "the Plivo console (Overview: Auth ID and Auth Token)"
	// ConsoleApplications is where an application and its App ID are.
	ConsoleApplications = "the Plivo console (Voice > Applications)"
	// Console is where the account is managed.
	Console = "the Plivo console"
	// ConsoleBuyNumbers is where a number is bought.
	ConsoleBuyNumbers = "the Plivo console (Phone Numbers > Buy Numbers)"
)

// Provider is Plivo in the catalogue of providers: its settings, its control of calls and
// numbers, its routes and media streams, and its words for number management.
var Provider = registry.Carrier{
	About: registry.About{
		Name:  Name,
		Title: "Plivo",
		Settings: []string{"PLIVO_AUTH_ID", "PLIVO_AUTH_TOKEN", "PLIVO_APP_ID", "HANDSET_PLIVO_API_URL",
			"HANDSET_PLIVO_CODEC", "HANDSET_PHONE_NUMBER", "HANDSET_PUBLIC_URL"},
		Hints: registry.Hints{KeyVar: "PLIVO_AUTH_TOKEN", URLVar: "HANDSET_PLIVO_API_URL",
			KeyWhere: ConsoleKeys,
			KeyFix:   "Set PLIVO_AUTH_ID and PLIVO_AUTH_TOKEN from " + ConsoleKeys + ", and PLIVO_APP_ID from " + ConsoleApplications + ".",
			NoMediaFix: "Plivo opened the audio stream but sent no audio: check that the WebSocket to " + StreamPath +
				" passes through every proxy or tunnel in both directions (HANDSET_PUBLIC_URL is the address in the answer XML), and that the caller did not hang up at once."},
		Checks: func(p registry.Probe) []doctor.Check {
			s := p.Settings
			return Checks(CheckSettings{
				Section:           p.Section,
				REST:              restOptions(s),
				AppID:             strings.TrimSpace(s.Value("PLIVO_APP_ID")),
				PhoneNumber:       s.Value("HANDSET_PHONE_NUMBER"),
				PublicURL:         s.Value("HANDSET_PUBLIC_URL"),
				PublicPlaceholder: p.PublicURLPlaceholder,
				Origin:            s.Source,
			})
		},
	},
	Declares:        settings,
	RequireTogether: [][]string{{"PLIVO_AUTH_ID", "PLIVO_AUTH_TOKEN"}},
	Started: func(s registry.Settings) bool {
		return s.Value("PLIVO_AUTH_ID") != "" || s.Value("PLIVO_AUTH_TOKEN") != "" || s.Value("PLIVO_APP_ID") != ""
	},
	AccountSettings: "PLIVO_AUTH_ID and PLIVO_AUTH_TOKEN",
	PhoneSetup:      "set PLIVO_AUTH_ID, PLIVO_AUTH_TOKEN, PLIVO_APP_ID and HANDSET_PUBLIC_URL, then run `handset attach-number`",
	Configured: func(s registry.Settings) bool {
		return s.Value("PLIVO_AUTH_ID") != "" && s.Value("PLIVO_AUTH_TOKEN") != ""
	},
	New:   newControl,
	Mount: mount,
	Numbers: registry.Numbers{
		Webhooks:        Webhooks,
		Open:            openAccount,
		Explain:         explain,
		AccountID:       func(s registry.Settings) string { return strings.TrimSpace(s.Value("PLIVO_AUTH_ID")) },
		Override:        "another application",
		Console:         Console,
		BuyNumbers:      ConsoleBuyNumbers,
		SignatureHeader: SignatureHeader,
	},
}

// settings are the settings Plivo brings to the configuration.
var settings = []registry.CarrierSetting{
	{Env: "PLIVO_AUTH_ID", YAML: "auth_id",
		Help: "The Plivo account's Auth ID (20 letters and digits), for the REST API."},
	{Env: "PLIVO_AUTH_TOKEN", YAML: "auth_token", Kind: registry.SettingSecret,
		Help: "The Plivo Auth Token: authenticates the REST API, checks Plivo's V3 signatures and keys the stream tokens."},
	{Env: "PLIVO_APP_ID", YAML: "app_id",
		Help: "The Plivo application whose answer and hangup URLs are Handset's; attach-number links numbers to it."},
	{Env: "HANDSET_PLIVO_API_URL", YAML: "api_url", Kind: registry.SettingURL, Default: DefaultRESTURL,
		Help: "Plivo's REST root, for proxies and tests."},
	{Env: "HANDSET_PLIVO_CODEC", YAML: "codec", Kind: registry.SettingEnum, Default: string(CodecMulaw),
		Allowed: []string{string(CodecMulaw), string(CodecL16)},
		Help:    "The audio stream's codec, the same both ways: mulaw (8 kHz) or l16 (16 kHz)."},
}

// restOptions are the REST client's settings.
func restOptions(s registry.Settings) RESTOptions {
	return RESTOptions{BaseURL: s.Value("HANDSET_PLIVO_API_URL"), AuthID: s.Value("PLIVO_AUTH_ID"), AuthToken: s.Value("PLIVO_AUTH_TOKEN")}
}

// controlOptions are Control's settings; memory may be nil.
func controlOptions(s registry.Settings, memory carrier.Memory) ControlOptions {
	o := ControlOptions{REST: restOptions(s), PublicURL: s.Value("HANDSET_PUBLIC_URL"), AppID: strings.TrimSpace(s.Value("PLIVO_APP_ID"))}
	if memory != nil {
		o.Ledger = memory
	}
	return o
}

// newControl is the control jobs and transfers use: it reads the ledger the routes write.
func newControl(b registry.Build) (carrier.Carrier, error) {
	var memory carrier.Memory
	if b.Memory != nil {
		memory = b.Memory(Name)
	}
	return NewControl(controlOptions(b.Settings, memory))
}

// mount serves Plivo's routes on mux. Without credentials the routes refuse every request
// (none can be checked); a codec Handset does not stream is refused here, at startup.
func mount(mux *http.ServeMux, in carrier.Inbound, s registry.Settings) error {
	opts := Options{
		AuthToken:      s.Value("PLIVO_AUTH_TOKEN"),
		Codec:          Codec(strings.ToLower(strings.TrimSpace(s.Value("HANDSET_PLIVO_CODEC")))),
		PublicURL:      in.PublicURL,
		TrustedProxies: in.TrustedProxies,
		Memory:         in.Memory,
		Draining:       in.Draining,
		Admit:          in.Admit,
		OnProgress:     in.OnProgress,
		Logger:         in.Logger,
	}
	if _, ok := opts.Codec.Format(); !ok {
		return fmt.Errorf("HANDSET_PLIVO_CODEC %q is not mulaw or l16", opts.Codec)
	}
	if opts.AuthToken != "" {
		ctl, err := NewControl(controlOptions(s, in.Memory))
		if err != nil {
			return fmt.Errorf("plivo: %w", err)
		}
		opts.Control = ctl
	}
	New(opts).Register(mux)
	return nil
}

// openAccount is the control of the account the settings name, with errors that say
// which setting to set and where its value is found.
func openAccount(s registry.Settings) (carrier.Carrier, error) {
	id, token := s.Value("PLIVO_AUTH_ID"), s.Value("PLIVO_AUTH_TOKEN")
	switch {
	case id == "" && token == "":
		return nil, fmt.Errorf("Plivo is not configured: set PLIVO_AUTH_ID and PLIVO_AUTH_TOKEN (from %s), in the environment or .env", ConsoleKeys)
	case id == "":
		return nil, fmt.Errorf("PLIVO_AUTH_ID is not set: copy it from %s", ConsoleKeys)
	case token == "":
		return nil, fmt.Errorf("PLIVO_AUTH_TOKEN is not set: copy it from %s", ConsoleKeys)
	}
	return NewControl(controlOptions(s, nil))
}

// explain turns a failure of the account's control into an error that says what to do.
func explain(s registry.Settings, err error) error {
	rest, rerr := NewREST(restOptions(s))
	if rerr != nil {
		return err
	}
	at := ""
	if rest.BaseURL() != DefaultRESTURL {
		at = " at " + rest.BaseURL() + " (HANDSET_PLIVO_API_URL)"
	}
	switch {
	case errors.Is(err, carrier.ErrNotFound) && strings.Contains(err.Error(), "pplication"):
		return fmt.Errorf("Plivo%s has no application %s (PLIVO_APP_ID, from %s): %w\nhint: copy the App ID from %s",
			at, strings.TrimSpace(s.Value("PLIVO_APP_ID")), s.Source("PLIVO_APP_ID"), err, ConsoleApplications)
	case errors.Is(err, carrier.ErrNotFound):
		return fmt.Errorf("%w\nhint: run `handset numbers` to see the account's numbers, or buy one in %s", err, ConsoleBuyNumbers)
	}
	switch voice.KindOf(err) {
	case voice.KindAuth:
		return fmt.Errorf("Plivo%s refused the credentials (PLIVO_AUTH_ID and PLIVO_AUTH_TOKEN, from %s)\nhint: copy both again from %s\n(%v)",
			at, s.Source("PLIVO_AUTH_TOKEN"), ConsoleKeys, err)
	case voice.KindTimeout, voice.KindTransient:
		return fmt.Errorf("could not reach Plivo%s: %w\nhint: check the network, https://status.plivo.com, and HANDSET_PLIVO_API_URL if you set it; then try again", at, err)
	case voice.KindQuota:
		return fmt.Errorf("Plivo%s is refusing requests for now (rate limit or account credit): %w\nhint: wait a minute and try again; check the credit in %s", at, err, Console)
	}
	return err
}
