package twilio

import (
	"net/http"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
)

// Provider is Twilio in the catalogue of providers: its account checks, its control of
// calls and numbers, its webhooks and media streams, and its words for number management.
var Provider = registry.Carrier{
	About: registry.About{
		Name:  "twilio",
		Title: "Twilio",
		Settings: []string{"TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "HANDSET_TWILIO_API_URL",
			"HANDSET_PHONE_NUMBER", "HANDSET_PUBLIC_URL"},
		Hints: registry.Hints{KeyVar: "TWILIO_AUTH_TOKEN", URLVar: "HANDSET_TWILIO_API_URL",
			KeyWhere:   ConsoleAccountInfo,
			KeyFix:     "Set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN from " + ConsoleAccountInfo + ".",
			NoMediaFix: "Twilio opened the media stream but sent no media frames: check that the WebSocket to /twilio/stream passes through every proxy or tunnel in both directions (HANDSET_PUBLIC_URL is the address in the TwiML), and that the caller did not hang up at once."},
		Checks: func(p registry.Probe) []doctor.Check {
			s := p.Settings
			return Checks(CheckSettings{
				Section:     p.Section,
				REST:        restOptions(s),
				PhoneNumber: s.Value("HANDSET_PHONE_NUMBER"), PublicURL: s.Value("HANDSET_PUBLIC_URL"),
				PublicPlaceholder: p.PublicURLPlaceholder,
				Origin:            s.Source,
			})
		},
	},
	Started: func(s registry.Settings) bool {
		return s.Value("TWILIO_ACCOUNT_SID") != "" || s.Value("TWILIO_AUTH_TOKEN") != ""
	},
	AccountSettings: "TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN",
	PhoneSetup:      "set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and HANDSET_PUBLIC_URL, then run `handset attach-number`",
	Configured: func(s registry.Settings) bool {
		return s.Value("TWILIO_ACCOUNT_SID") != "" && s.Value("TWILIO_AUTH_TOKEN") != ""
	},
	New:     func(b registry.Build) (carrier.Carrier, error) { return NewControl(restOptions(b.Settings)) },
	Mount:   mount,
	Numbers: numbers,
}

// mount serves the voice webhook, the media stream and the status callback on mux.
func mount(mux *http.ServeMux, in carrier.Inbound, s registry.Settings) error {
	New(Options{
		AuthToken:      s.Value("TWILIO_AUTH_TOKEN"),
		PublicURL:      in.PublicURL,
		TrustedProxies: in.TrustedProxies,
		Memory:         in.Memory,
		Draining:       in.Draining,
		Admit:          in.Admit,
		OnProgress:     in.OnProgress,
		Logger:         in.Logger,
	}).Register(mux)
	return nil
}

// restOptions are the REST client's settings.
func restOptions(s registry.Settings) RESTOptions {
	return RESTOptions{BaseURL: s.Value("HANDSET_TWILIO_API_URL"), AccountSID: s.Value("TWILIO_ACCOUNT_SID"),
		AuthToken: s.Value("TWILIO_AUTH_TOKEN")}
}
