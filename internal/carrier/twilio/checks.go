package twilio

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/voice"
)

// ConsoleAccountInfo is where the account SID and auth token are shown.
const ConsoleAccountInfo = "the Twilio console, https://console.twilio.com (Account Info on the dashboard)"

// CheckSettings are the settings doctor's Twilio checks read, as configured.
type CheckSettings struct {
	// Section is the doctor section the results go in ("carrier").
	Section string
	// REST are TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and HANDSET_TWILIO_API_URL.
	REST RESTOptions
	// PhoneNumber is HANDSET_PHONE_NUMBER: the number that should ring Handset.
	PhoneNumber string
	// PublicURL is HANDSET_PUBLIC_URL, and PublicPlaceholder whether it is an address
	// reserved for examples, which cannot be Handset's.
	PublicURL         string
	PublicPlaceholder bool
	// Origin says where a setting came from (".env", "the environment", …), for messages.
	Origin func(env string) string
}

// Checks are doctor's checks of the Twilio account: that the credentials work, that
// HANDSET_PHONE_NUMBER is one of its numbers, and that the number's calls reach Handset.
// They share one lookup of the account and one of the number.
func Checks(s CheckSettings) []doctor.Check {
	fixed := func(name string, r doctor.Result) []doctor.Check {
		return []doctor.Check{{Section: s.Section, Name: name, Run: func(context.Context) doctor.Result { return r }}}
	}
	switch {
	case s.REST.AccountSID == "" && s.REST.AuthToken == "":
		return fixed("twilio", skip("Twilio is not configured: browser calls only"))
	case s.REST.AccountSID == "" || s.REST.AuthToken == "":
		return fixed("twilio", skip("Twilio credentials are incomplete (see config)"))
	}
	p := &probes{s: s}
	check := func(name string, run func(context.Context) doctor.Result) doctor.Check {
		return doctor.Check{Section: s.Section, Name: name, Network: true, Run: run}
	}
	return []doctor.Check{
		check("twilio credentials", p.credentials),
		check("phone number", p.phoneNumber),
		check("voice webhook", p.voiceWebhook),
	}
}

// probes are the Twilio requests the checks share, each made once.
type probes struct {
	s       CheckSettings
	account doctor.Shared[Account]
	number  doctor.Shared[Number]
}

func (p *probes) rest() (*REST, error) {
	rest, err := NewREST(p.s.REST)
	if err != nil {
		return nil, fmt.Errorf("%w (the Account SID and Auth Token are under Account Info at https://console.twilio.com)", err)
	}
	return rest, nil
}

func (p *probes) getAccount(ctx context.Context) (Account, error) {
	return p.account.Get(ctx, func(ctx context.Context) (Account, error) {
		rest, err := p.rest()
		if err != nil {
			return Account{}, err
		}
		return rest.Account(ctx)
	})
}

func (p *probes) getNumber(ctx context.Context) (Number, error) {
	return p.number.Get(ctx, func(ctx context.Context) (Number, error) {
		rest, err := p.rest()
		if err != nil {
			return Number{}, err
		}
		return rest.FindNumber(ctx, p.s.PhoneNumber)
	})
}

func (p *probes) origin(env string) string {
	if p.s.Origin == nil {
		return "the configuration"
	}
	return p.s.Origin(env)
}

// attach is the command that points the number at HANDSET_PUBLIC_URL + /twilio/voice.
func (p *probes) attach() string { return "handset attach-number " + cmp.Or(p.s.PhoneNumber, "NUMBER") }

func (p *probes) credentials(ctx context.Context) doctor.Result {
	acct, err := p.getAccount(ctx)
	var pe *voice.ProviderError
	isPE := errors.As(err, &pe)
	kind := voice.KindOf(err)
	api := p.s.REST.BaseURL
	switch {
	case kind == voice.KindAuth:
		return fail(fmt.Sprintf("Twilio rejects the auth token (TWILIO_AUTH_TOKEN, from %s) for account %s (TWILIO_ACCOUNT_SID, from %s)",
			p.origin("TWILIO_AUTH_TOKEN"), p.s.REST.AccountSID, p.origin("TWILIO_ACCOUNT_SID")),
			"copy the Account SID and Auth Token of the same account from "+ConsoleAccountInfo+"; after rotating the token, use the new primary one")
	case err != nil && !isPE:
		return fail(err.Error(), "correct the Twilio settings named here")
	case err != nil && (kind == voice.KindTransient || kind == voice.KindTimeout) && pe.Status == 0:
		return fail("cannot reach Twilio at "+api+": "+err.Error(), "check this machine's network, https://status.twilio.com and HANDSET_TWILIO_API_URL")
	case err != nil:
		return fail("Twilio answered: "+err.Error(), "check https://status.twilio.com, the account in the Twilio console, and HANDSET_TWILIO_API_URL")
	case acct.Status != "" && acct.Status != "active":
		return fail(fmt.Sprintf("Twilio account %s is %s", acct.SID, acct.Status), "reactivate the account in the Twilio console, or use another one")
	case strings.EqualFold(acct.Type, "Trial"):
		return warn(fmt.Sprintf("%s (%s) is a trial account: calls start with Twilio's trial notice and can only reach verified numbers", acct.FriendlyName, acct.SID),
			"upgrade the account in the Twilio console")
	}
	return ok(fmt.Sprintf("%s (%s, %s)", cmp.Or(acct.FriendlyName, acct.SID), acct.SID, cmp.Or(acct.Status, "status unknown")))
}

func (p *probes) phoneNumber(ctx context.Context) doctor.Result {
	if p.s.PhoneNumber == "" {
		return warn("HANDSET_PHONE_NUMBER is not set: doctor cannot check which number rings Handset, and outbound calls have no caller id",
			"set HANDSET_PHONE_NUMBER to your Twilio number in E.164 form, like +14155550100")
	}
	if _, err := p.getAccount(ctx); err != nil {
		return skip("not checked (see twilio credentials)")
	}
	n, err := p.getNumber(ctx)
	switch {
	case errors.Is(err, ErrNumberNotFound):
		return fail(err.Error()+" (HANDSET_PHONE_NUMBER from "+p.origin("HANDSET_PHONE_NUMBER")+")",
			"set HANDSET_PHONE_NUMBER to one of the account's numbers, or buy or port this number into the account")
	case err != nil:
		return fail("cannot look the number up: "+err.Error(), "check the Twilio settings and this machine's network")
	}
	return ok(fmt.Sprintf("%s (%s) is on the account", n.PhoneNumber, n.SID))
}

func (p *probes) voiceWebhook(ctx context.Context) doctor.Result {
	if p.s.PhoneNumber == "" {
		return skip("no HANDSET_PHONE_NUMBER to check")
	}
	n, err := p.getNumber(ctx)
	if err != nil {
		return skip("not checked (see phone number)")
	}
	public := strings.TrimRight(p.s.PublicURL, "/")
	want := public + VoicePath
	attach := p.attach()
	switch {
	case n.VoiceApplicationSID != "":
		return fail(fmt.Sprintf("calls to %s go to the TwiML app %s, which overrides the number's voice URL", n.PhoneNumber, n.VoiceApplicationSID),
			attach+" (it points the number at Handset and clears the app)")
	case p.s.PublicPlaceholder:
		// Attaching now would point the number at the placeholder.
		return warn(fmt.Sprintf("calls to %s go to %s; HANDSET_PUBLIC_URL is the placeholder %s, so doctor cannot tell whether that is Handset", n.PhoneNumber, cmp.Or(n.VoiceURL, "nowhere (no voice URL)"), public),
			"replace HANDSET_PUBLIC_URL with the https address of your tunnel or domain, then "+attach)
	case public == "":
		return warn(fmt.Sprintf("calls to %s go to %s; HANDSET_PUBLIC_URL is not set, so doctor cannot tell whether that is Handset", n.PhoneNumber, cmp.Or(n.VoiceURL, "nowhere (no voice URL)")),
			"set HANDSET_PUBLIC_URL, then "+attach)
	case n.VoiceURL == "":
		return fail(fmt.Sprintf("%s has no voice webhook: its calls never reach Handset", n.PhoneNumber), attach)
	case !carrier.SameWebhookURL(n.VoiceURL, want):
		return fail(fmt.Sprintf("calls to %s go to %s, not %s", n.PhoneNumber, n.VoiceURL, want), attach)
	case n.VoiceMethod != "" && !strings.EqualFold(n.VoiceMethod, http.MethodPost):
		return fail(fmt.Sprintf("Twilio calls the webhook with %s; Handset answers POST", n.VoiceMethod), attach)
	}
	return ok(fmt.Sprintf("calls to %s go to %s", n.PhoneNumber, want))
}

func ok(detail string) doctor.Result   { return doctor.Result{Status: doctor.OK, Detail: detail} }
func skip(detail string) doctor.Result { return doctor.Result{Status: doctor.Skip, Detail: detail} }
func warn(detail, fix string) doctor.Result {
	return doctor.Result{Status: doctor.Warn, Detail: detail, Fix: fix}
}
func fail(detail, fix string) doctor.Result {
	return doctor.Result{Status: doctor.Fail, Detail: detail, Fix: fix}
}
