package sip

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

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
			SettingCodecs, SettingRegistrar, SettingTrunk, SettingUsername, SettingPassword,
			SettingInboundUsername, SettingInboundPassword, SettingSRTP, SettingTLSListen, SettingTLSCert, SettingTLSKey, SettingTLSCA,
			"HANDSET_PHONE_NUMBER"},
		Hints: registry.Hints{
			NoMediaFix: "the trunk answered but sent no RTP: check that UDP " + SettingRTPPorts + " is open to the trunk's media servers, and that " +
				SettingPublicAddr + " is the address the trunk can reach (behind NAT, the public one).",
		},
		Checks: Checks,
	},
	Declares: settings,
	Configured: func(s registry.Settings) bool {
		return s.Value(SettingAllow) != "" || s.Value(SettingRegistrar) != "" || s.Value(SettingTrunk) != "" ||
			s.Value(SettingInboundUsername) != ""
	},
	Started: func(s registry.Settings) bool {
		return s.Value(SettingAllow) != "" || s.Value(SettingRegistrar) != "" || s.Value(SettingTrunk) != "" || s.Value(SettingPublicAddr) != "" ||
			s.Value(SettingInboundUsername) != ""
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

// listen starts the trunk's listeners for serve; the control reaches calls through it.
func listen(in carrier.Inbound, s registry.Settings) (func(), error) {
	opts, err := ReadOptions(s)
	if err != nil {
		return nil, err
	}
	t, err := Start(opts, in)
	if err != nil {
		return nil, err
	}
	running.Store(t)
	return func() {
		running.CompareAndSwap(t, nil)
		t.Close()
	}, nil
}

// running is the trunk serve started: one a process. The control of calls (built before
// serve listens) finds it here.
var running atomic.Pointer[Trunk]

// control is a SIP trunk's control of calls, through the running trunk.
type control struct{}

func newControl(registry.Build) (carrier.Carrier, error) { return control{}, nil }

// errNotListening: the trunk is not running in this process.
var errNotListening = errors.New("the SIP trunk is not listening in this process (handset serve starts it)")

func trunk() (*Trunk, error) {
	if t := running.Load(); t != nil {
		return t, nil
	}
	return nil, carrier.Classify(carrier.ErrUnreachable, errNotListening)
}

func (control) Name() string { return Name }

func (control) Dial(_ context.Context, d carrier.Dial) (carrier.Call, error) {
	t, err := trunk()
	if err != nil {
		return carrier.Call{}, err
	}
	return t.place(d)
}

func (control) Call(_ context.Context, ref string) (carrier.Call, error) {
	t, err := trunk()
	if err != nil {
		return carrier.Call{}, err
	}
	if c, ok := t.placedCall(ref); ok {
		return c, nil
	}
	return carrier.Call{}, carrier.Classify(carrier.ErrNotFound, fmt.Errorf("no call %s in progress on this node", ref))
}

func (control) Hangup(_ context.Context, ref string) error {
	t, err := trunk()
	if err != nil {
		return err
	}
	t.hangUpPlaced(ref) // a call that has ended counts as hung up
	return nil
}

// Transfer moves a call to another number with a blind REFER, and returns once the far
// end reports the new call answered.
func (control) Transfer(ctx context.Context, ref, to, _ string) error {
	t, err := trunk()
	if err != nil {
		return err
	}
	if _, placed := t.placedCall(ref); placed {
		return t.transferPlaced(ctx, ref, to)
	}
	return t.transferInbound(ctx, ref, to)
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
