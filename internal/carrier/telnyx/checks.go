package telnyx

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/voice"
)

// CheckSettings are the settings doctor's Telnyx checks read, as configured.
type CheckSettings struct {
	// Section is the doctor section the results go in ("carrier").
	Section string
	// REST are TELNYX_API_KEY, TELNYX_CONNECTION_ID and HANDSET_TELNYX_API_URL.
	REST RESTOptions
	// PublicKey is TELNYX_PUBLIC_KEY, which webhook signatures are checked with.
	PublicKey string
	// PhoneNumber is HANDSET_PHONE_NUMBER: the number that should ring Handset.
	PhoneNumber string
	// PublicURL is HANDSET_PUBLIC_URL, and PublicPlaceholder whether it is an address
	// reserved for examples.
	PublicURL         string
	PublicPlaceholder bool
	// Origin says where a setting came from (".env", "the environment", …), for messages.
	Origin func(env string) string
}

// Checks are doctor's checks of the Telnyx account: the API key works, the public key is
// one, the Call Control Application exists and sends version 2 events to Handset's
// webhook, the number is on the application, and the public URL is https. They share
// one lookup of the application and one of the number.
func Checks(s CheckSettings) []doctor.Check {
	if s.REST.APIKey == "" && s.REST.ConnectionID == "" && s.PublicKey == "" {
		return []doctor.Check{doctor.Fixed(s.Section, "telnyx", doctor.SkipResult("Telnyx is not configured"))}
	}
	p := &checkProbes{s: s}
	return []doctor.Check{
		doctor.Net(s.Section, "telnyx api key", p.apiKey),
		doctor.Local(s.Section, "telnyx public key", p.publicKey),
		doctor.Net(s.Section, "call control application", p.application),
		doctor.Net(s.Section, "telnyx webhook", p.webhook),
		doctor.Net(s.Section, "phone number", p.phoneNumber),
		doctor.Local(s.Section, "public url", p.publicURL),
	}
}

// checkProbes are the Telnyx requests the checks share, each made once.
type checkProbes struct {
	s       CheckSettings
	balance doctor.Shared[Balance]
	app     doctor.Shared[Application]
	number  doctor.Shared[PhoneNumber]
}

func (p *checkProbes) rest() (*REST, error) { return NewREST(p.s.REST) }

func (p *checkProbes) origin(env string) string {
	if p.s.Origin == nil {
		return "the configuration"
	}
	return p.s.Origin(env)
}

// attach is the command that points the application at Handset.
func (p *checkProbes) attach() string {
	return "handset attach-number --carrier telnyx " + cmp.Or(p.s.PhoneNumber, "NUMBER")
}

func (p *checkProbes) getBalance(ctx context.Context) (Balance, error) {
	return p.balance.Get(ctx, func(ctx context.Context) (Balance, error) {
		rest, err := p.rest()
		if err != nil {
			return Balance{}, err
		}
		return rest.Balance(ctx)
	})
}

func (p *checkProbes) getApplication(ctx context.Context) (Application, error) {
	return p.app.Get(ctx, func(ctx context.Context) (Application, error) {
		rest, err := p.rest()
		if err != nil {
			return Application{}, err
		}
		return rest.Application(ctx, p.s.REST.ConnectionID)
	})
}

func (p *checkProbes) getNumber(ctx context.Context) (PhoneNumber, error) {
	return p.number.Get(ctx, func(ctx context.Context) (PhoneNumber, error) {
		rest, err := p.rest()
		if err != nil {
			return PhoneNumber{}, err
		}
		return rest.FindNumber(ctx, p.s.PhoneNumber)
	})
}

func (p *checkProbes) apiKey(ctx context.Context) doctor.Result {
	b, err := p.getBalance(ctx)
	api := cmp.Or(p.s.REST.BaseURL, DefaultRESTURL)
	var pe *voice.ProviderError
	switch {
	case err == nil:
		return doctor.OKResult(fmt.Sprintf("the key works (balance %s %s)", cmp.Or(b.Balance, "?"), b.Currency))
	case !errors.As(err, &pe):
		return doctor.FailResult(err.Error(), "set TELNYX_API_KEY from "+PortalKeys)
	case errors.Is(err, carrier.ErrAuth):
		return doctor.FailResult(fmt.Sprintf("Telnyx refuses the API key (TELNYX_API_KEY, from %s)", p.origin("TELNYX_API_KEY")),
			"create an API key in "+PortalKeys)
	case pe.Status == 0:
		return doctor.FailResult("cannot reach Telnyx at "+api+": "+err.Error(), "check this machine's network, https://status.telnyx.com and HANDSET_TELNYX_API_URL")
	}
	return doctor.FailResult("Telnyx answered: "+err.Error(), "check https://status.telnyx.com and the account in "+Portal)
}

func (p *checkProbes) publicKey(context.Context) doctor.Result {
	if p.s.PublicKey == "" {
		return doctor.FailResult("TELNYX_PUBLIC_KEY is not set: Handset cannot check that webhooks come from Telnyx, so it refuses them",
			"copy the public key from "+PortalKeys+" into TELNYX_PUBLIC_KEY")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(p.s.PublicKey))
	if err != nil || len(key) != ed25519.PublicKeySize {
		return doctor.FailResult(fmt.Sprintf("TELNYX_PUBLIC_KEY (from %s) is not base64 of a 32-byte Ed25519 key", p.origin("TELNYX_PUBLIC_KEY")),
			"copy the account's public key (not the API key) from "+PortalKeys)
	}
	return doctor.OKResult("an Ed25519 public key")
}

func (p *checkProbes) application(ctx context.Context) doctor.Result {
	if p.s.REST.ConnectionID == "" {
		return doctor.FailResult("TELNYX_CONNECTION_ID is not set: Handset has no Call Control Application to place calls from",
			"copy the application's id from "+PortalApplications+" into TELNYX_CONNECTION_ID")
	}
	if _, err := p.getBalance(ctx); err != nil {
		return doctor.SkipResult("not checked (see telnyx api key)")
	}
	app, err := p.getApplication(ctx)
	switch {
	case errors.Is(err, carrier.ErrNotFound):
		return doctor.FailResult(fmt.Sprintf("the account has no Call Control Application %s (TELNYX_CONNECTION_ID, from %s)", p.s.REST.ConnectionID, p.origin("TELNYX_CONNECTION_ID")),
			"copy the id of a Call Control Application (not a SIP connection) from "+PortalApplications)
	case err != nil:
		return doctor.FailResult("cannot read the application: "+err.Error(), "check the Telnyx settings and this machine's network")
	case app.WebhookAPIVersion != "2":
		return doctor.FailResult(fmt.Sprintf("application %s sends webhook API version %q events; Handset reads version 2", app.ID, app.WebhookAPIVersion),
			p.attach()+" (it sets version 2), or choose API v2 in the application's settings")
	case !app.Active:
		return doctor.WarnResult(fmt.Sprintf("application %s (%s) is inactive", app.ID, app.ApplicationName), "activate it in "+PortalApplications)
	}
	timeout := "no first-command timeout"
	if app.FirstCommandTimeout {
		timeout = fmt.Sprintf("a parked call is dropped %d s after it arrives without a command", app.FirstCommandTimeoutSecs)
	}
	return doctor.OKResult(fmt.Sprintf("%s (%s), webhook API v2; %s", cmp.Or(app.ApplicationName, app.ID), app.ID, timeout))
}

func (p *checkProbes) webhook(ctx context.Context) doctor.Result {
	app, err := p.getApplication(ctx)
	if err != nil || p.s.REST.ConnectionID == "" {
		return doctor.SkipResult("not checked (see call control application)")
	}
	public := strings.TrimRight(p.s.PublicURL, "/")
	want := public + WebhookPath
	switch {
	case p.s.PublicPlaceholder || public == "":
		return doctor.WarnResult(fmt.Sprintf("the application's events go to %s; HANDSET_PUBLIC_URL is not set to Handset's address, so doctor cannot tell whether that is Handset",
			cmp.Or(app.WebhookEventURL, "nowhere")), "set HANDSET_PUBLIC_URL to your tunnel's or domain's https address, then "+p.attach())
	case app.WebhookEventURL == "":
		return doctor.FailResult("the application has no webhook URL: its calls never reach Handset", p.attach())
	case !carrier.SameWebhookURL(app.WebhookEventURL, want):
		return doctor.FailResult(fmt.Sprintf("the application's events go to %s, not %s", app.WebhookEventURL, want),
			p.attach()+" (every number on the application follows)")
	}
	return doctor.OKResult("events go to " + want)
}

func (p *checkProbes) phoneNumber(ctx context.Context) doctor.Result {
	if p.s.PhoneNumber == "" {
		return doctor.WarnResult("HANDSET_PHONE_NUMBER is not set: doctor cannot check which number rings Handset, and outbound calls have no caller id",
			"set HANDSET_PHONE_NUMBER to your Telnyx number in E.164 form, like +14155550100")
	}
	if _, err := p.getBalance(ctx); err != nil {
		return doctor.SkipResult("not checked (see telnyx api key)")
	}
	n, err := p.getNumber(ctx)
	switch {
	case errors.Is(err, carrier.ErrNotFound) || errors.Is(err, carrier.ErrInvalid):
		return doctor.FailResult(fmt.Sprintf("%s (HANDSET_PHONE_NUMBER, from %s) is not a number of the account", p.s.PhoneNumber, p.origin("HANDSET_PHONE_NUMBER")),
			"set HANDSET_PHONE_NUMBER to one of the account's numbers, or buy one in "+PortalBuyNumbers)
	case err != nil:
		return doctor.FailResult("cannot look the number up: "+err.Error(), "check the Telnyx settings and this machine's network")
	case n.ConnectionID != p.s.REST.ConnectionID:
		return doctor.FailResult(fmt.Sprintf("%s is on connection %s, not the application %s: its calls do not reach Handset", n.PhoneNumber, cmp.Or(n.ConnectionID, "(none)"), p.s.REST.ConnectionID),
			p.attach())
	}
	return doctor.OKResult(fmt.Sprintf("%s (%s) is on the application", n.PhoneNumber, n.ID))
}

func (p *checkProbes) publicURL(context.Context) doctor.Result {
	u, err := url.Parse(p.s.PublicURL)
	switch {
	case p.s.PublicURL == "":
		return doctor.SkipResult("HANDSET_PUBLIC_URL is not set")
	case err != nil || u.Host == "":
		return doctor.FailResult(fmt.Sprintf("HANDSET_PUBLIC_URL %q is not a URL", p.s.PublicURL), "set it to the https address Telnyx reaches Handset at")
	case u.Scheme != "https":
		return doctor.WarnResult(fmt.Sprintf("HANDSET_PUBLIC_URL is %s, not https: the media stream would be unencrypted ws://", u.Scheme),
			"serve Handset behind https (a tunnel or a reverse proxy) and set HANDSET_PUBLIC_URL to that address")
	}
	return doctor.OKResult(p.s.PublicURL)
}
