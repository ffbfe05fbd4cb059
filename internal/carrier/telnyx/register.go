package telnyx

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
)

// Provider is Telnyx in the catalogue of providers: its settings, its control of calls and
// numbers, its webhook and media streams, and its words for number management.
var Provider = registry.Carrier{
	About: registry.About{
		Name:  Name,
		Title: "Telnyx",
		Settings: []string{"TELNYX_API_KEY", "TELNYX_PUBLIC_KEY", "TELNYX_CONNECTION_ID", "HANDSET_TELNYX_API_URL",
			"HANDSET_TELNYX_CODEC", "HANDSET_PHONE_NUMBER", "HANDSET_PUBLIC_URL"},
		Hints: registry.Hints{KeyVar: "TELNYX_API_KEY", URLVar: "HANDSET_TELNYX_API_URL",
			KeyWhere: PortalKeys,
			KeyFix:   "Set TELNYX_API_KEY and TELNYX_PUBLIC_KEY from " + PortalKeys + ", and TELNYX_CONNECTION_ID from " + PortalApplications + ".",
			NoMediaFix: "Telnyx opened the media stream but sent no media frames: check that the WebSocket to " + StreamPath +
				" passes through every proxy or tunnel in both directions (HANDSET_PUBLIC_URL is the address in the answer command), and that the caller did not hang up at once."},
		Checks: func(p registry.Probe) []doctor.Check {
			s := p.Settings
			return Checks(CheckSettings{
				Section:           p.Section,
				REST:              restOptions(s),
				PublicKey:         s.Value("TELNYX_PUBLIC_KEY"),
				PhoneNumber:       s.Value("HANDSET_PHONE_NUMBER"),
				PublicURL:         s.Value("HANDSET_PUBLIC_URL"),
				PublicPlaceholder: p.PublicURLPlaceholder,
				Origin:            s.Source,
			})
		},
	},
	Declares:        settings,
	RequireTogether: [][]string{{"TELNYX_API_KEY", "TELNYX_PUBLIC_KEY", "TELNYX_CONNECTION_ID"}},
	Started: func(s registry.Settings) bool {
		return s.Value("TELNYX_API_KEY") != "" || s.Value("TELNYX_PUBLIC_KEY") != "" || s.Value("TELNYX_CONNECTION_ID") != ""
	},
	AccountSettings: "TELNYX_API_KEY, TELNYX_PUBLIC_KEY and TELNYX_CONNECTION_ID",
	PhoneSetup:      "set TELNYX_API_KEY, TELNYX_PUBLIC_KEY, TELNYX_CONNECTION_ID and HANDSET_PUBLIC_URL, then run `handset attach-number`",
	Configured: func(s registry.Settings) bool {
		return s.Value("TELNYX_API_KEY") != "" && s.Value("TELNYX_PUBLIC_KEY") != "" && s.Value("TELNYX_CONNECTION_ID") != ""
	},
	New:     newControl,
	Mount:   mount,
	Numbers: numbers,
}

// settings are the settings Telnyx brings to the configuration.
var settings = []registry.CarrierSetting{
	{Env: "TELNYX_API_KEY", YAML: "api_key", Kind: registry.SettingSecret,
		Help: "The Telnyx API key (Bearer) for Call Control and numbers; the media stream tokens' key is derived from it."},
	{Env: "TELNYX_PUBLIC_KEY", YAML: "public_key",
		Help: "The account's webhook public key (Mission Control: Keys & Credentials, Public Key): base64 of 32 bytes."},
	{Env: "TELNYX_CONNECTION_ID", YAML: "connection_id",
		Help: "The id of the Call Control Application whose webhook URL is Handset's; outbound calls use it."},
	{Env: "HANDSET_TELNYX_API_URL", YAML: "api_url", Kind: registry.SettingURL, Default: DefaultRESTURL,
		Help: "Telnyx's REST root, for proxies and tests."},
	{Env: "HANDSET_TELNYX_CODEC", YAML: "codec", Kind: registry.SettingEnum, Default: string(CodecPCMU),
		Allowed: []string{string(CodecPCMU), string(CodecPCMA), string(CodecL16)},
		Help:    "The media stream's codec, the same both ways; L16 is 16 kHz."},
}

// mount serves the webhook and the media stream on mux. A public key that is set but not
// an Ed25519 key is refused here, at startup; an unset one leaves the routes refusing
// every request until it is set.
func mount(mux *http.ServeMux, in carrier.Inbound, s registry.Settings) error {
	opts := Options{
		APIKey:         s.Value("TELNYX_API_KEY"),
		Codec:          Codec(strings.ToUpper(strings.TrimSpace(s.Value("HANDSET_TELNYX_CODEC")))),
		PublicURL:      in.PublicURL,
		TrustedProxies: in.TrustedProxies,
		Memory:         in.Memory,
		Draining:       in.Draining,
		Admit:          in.Admit,
		OnProgress:     in.OnProgress,
		Logger:         in.Logger,
	}
	if _, ok := opts.Codec.Format(); !ok {
		return fmt.Errorf("HANDSET_TELNYX_CODEC %q is not PCMU, PCMA or L16", opts.Codec)
	}
	if v := s.Value("TELNYX_PUBLIC_KEY"); v != "" {
		key, err := ParsePublicKey(v)
		if err != nil {
			return fmt.Errorf("TELNYX_PUBLIC_KEY: %w (copy it again from %s)", err, PortalKeys)
		}
		opts.PublicKey = key
	}
	rest, err := NewREST(restOptions(s))
	if err != nil {
		opts.Command = func(context.Context, string, string, any) error { return err }
	} else {
		opts.Command = rest.Command
	}
	New(opts).Register(mux)
	return nil
}
