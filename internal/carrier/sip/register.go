package sip

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/registry"
)

// DocsPage is where connecting a trunk or a PBX is described.
const DocsPage = "docs/sip.md"

// Provider is direct SIP trunking in the catalogue of providers: its settings, its
// listeners, and what the number commands say of it (a trunk's numbers are routed in the
// trunk provider's portal or the PBX, not through an API).
var Provider = registry.Carrier{
	About: registry.About{
		Name:  Name,
		Title: "SIP trunk",
		Settings: []string{SettingAllow, SettingListen, SettingTransports, SettingPublicAddr, SettingRTPPorts,
			SettingCodecs, SettingRegistrar, SettingUsername, SettingPassword, "HANDSET_PHONE_NUMBER"},
		Hints: registry.Hints{
			NoMediaFix: "the trunk answered but sent no RTP: check that UDP " + SettingRTPPorts + " is open to the trunk's media servers, and that " +
				SettingPublicAddr + " is the address the trunk can reach (behind NAT, the public one).",
		},
		Checks: Checks,
	},
	Declares: settings,
	Configured: func(s registry.Settings) bool {
		return s.Value(SettingAllow) != "" || s.Value(SettingRegistrar) != ""
	},
	Started: func(s registry.Settings) bool {
		return s.Value(SettingAllow) != "" || s.Value(SettingRegistrar) != "" || s.Value(SettingPublicAddr) != ""
	},
	AccountSettings: SettingAllow + " (or " + SettingRegistrar + ")",
	PhoneSetup:      "set " + SettingAllow + " to the trunk's signalling hosts (and " + SettingPublicAddr + " behind NAT), then point the trunk's numbers at sip:<that address>:5060 (" + DocsPage + ")",
	New:             newControl,
	Mount:           func(*http.ServeMux, carrier.Inbound, registry.Settings) error { return nil },
	Listen:          listen,
	Numbers: registry.Numbers{
		Open: func(registry.Settings) (carrier.Carrier, error) { return nil, errNoNumbersAPI },
		Explain: func(_ registry.Settings, err error) error {
			return err
		},
		AccountID:  func(registry.Settings) string { return "" },
		Webhooks:   carrier.Webhooks{Same: func(string, string) bool { return false }},
		Override:   "route on the trunk",
		Console:    "the trunk provider's portal or the PBX",
		BuyNumbers: "the trunk provider's portal",
	},
}

// errNoNumbersAPI is what the number commands say for a SIP trunk.
var errNoNumbersAPI = fmt.Errorf("a SIP trunk's numbers are routed in the trunk provider's portal or the PBX, not by Handset: "+
	"point them at sip:<%s>:5060 (%s)", SettingPublicAddr, DocsPage)

// listen starts the trunk's listeners for serve.
func listen(in carrier.Inbound, s registry.Settings) (func(), error) {
	opts, err := ReadOptions(s)
	if err != nil {
		return nil, err
	}
	t, err := Start(opts, in)
	if err != nil {
		return nil, err
	}
	return t.Close, nil
}

// control is a SIP trunk's control of calls: inbound calls are the trunk's to place;
// outbound calls through the trunk are not built yet and say so.
type control struct{}

func newControl(registry.Build) (carrier.Carrier, error) { return control{}, nil }

var errNoOutbound = errors.New("outbound calls through a SIP trunk are not supported yet: place them through Twilio, Telnyx or Plivo (HANDSET_CARRIER)")

func (control) Name() string { return Name }
func (control) Dial(context.Context, carrier.Dial) (carrier.Call, error) {
	return carrier.Call{}, carrier.Classify(carrier.ErrRejected, errNoOutbound)
}
func (control) Call(context.Context, string) (carrier.Call, error) {
	return carrier.Call{}, carrier.Classify(carrier.ErrNotFound, errNoOutbound)
}
func (control) Hangup(context.Context, string) error {
	return carrier.Classify(carrier.ErrRejected, errNoOutbound)
}
func (control) Transfer(context.Context, string, string, string) error {
	return carrier.Classify(carrier.ErrRejected, errors.New("transfers of SIP trunk calls are not supported yet"))
}
func (control) Account(context.Context) (carrier.Account, error) {
	return carrier.Account{ID: Name, Name: "SIP trunk", Status: "active"}, nil
}
func (control) Numbers(context.Context) ([]carrier.Number, error) {
	return nil, carrier.Classify(carrier.ErrRejected, errNoNumbersAPI)
}
func (control) Number(context.Context, string) (carrier.Number, error) {
	return carrier.Number{}, carrier.Classify(carrier.ErrRejected, errNoNumbersAPI)
}
func (control) Attach(context.Context, carrier.Number, string, string) (carrier.Number, error) {
	return carrier.Number{}, carrier.Classify(carrier.ErrRejected, errNoNumbersAPI)
}
