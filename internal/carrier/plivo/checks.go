package plivo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/voice"
)

// CheckSettings are the settings doctor's Plivo checks read, as configured.
type CheckSettings struct {
	// Section is the doctor section the results go in ("carrier").
	Section string
	// REST are PLIVO_AUTH_ID, PLIVO_AUTH_TOKEN and HANDSET_PLIVO_API_URL.
	REST RESTOptions
	// AppID is PLIVO_APP_ID, the application whose URLs should be Handset's.
	AppID string
	// PhoneNumber is HANDSET_PHONE_NUMBER: the number that should ring Handset.
	PhoneNumber string
	// PublicURL is HANDSET_PUBLIC_URL, and PublicPlaceholder whether it is an address
	// reserved for examples.
	PublicURL         string
	PublicPlaceholder bool
	// Origin says where a setting came from (".env", "the environment", …), for messages.
	Origin func(env string) string
}

// Checks are doctor's checks of the Plivo account: the credentials work, the application
// exists and answers and hangs up at Handset's routes, the number is linked to it, and
// the public URL is https. They share one lookup of each resource.
func Checks(s CheckSettings) []doctor.Check {
	if s.REST.AuthID == "" && s.REST.AuthToken == "" && s.AppID == "" {
		return []doctor.Check{doctor.Fixed(s.Section, "plivo", doctor.SkipResult("Plivo is not configured"))}
	}
	p := &checkProbes{s: s}
	return []doctor.Check{
		doctor.Net(s.Section, "plivo credentials", p.credentials),
		doctor.Net(s.Section, "plivo application", p.application),
		doctor.Net(s.Section, "phone number", p.phoneNumber),
		doctor.Local(s.Section, "public url", p.publicURL),
	}
}

// checkProbes are the Plivo requests the checks share, each made once.
type checkProbes struct {
	s       CheckSettings
	account doctor.Shared[Account]
	app     doctor.Shared[Application]
	number  doctor.Shared[Number]
}

func (p *checkProbes) origin(env string) string {
	if p.s.Origin == nil {
		return "the configuration"
	}
	return p.s.Origin(env)
}

// attach is the command that points the application and number at Handset.
func (p *checkProbes) attach() string {
	return "handset attach-number --carrier plivo " + cmp.Or(p.s.PhoneNumber, "NUMBER")
}

// get runs one REST lookup through a shared result.
func get[T any](ctx context.Context, p *checkProbes, sh *doctor.Shared[T], fn func(context.Context, *REST) (T, error)) (T, error) {
	return sh.Get(ctx, func(ctx context.Context) (T, error) {
		rest, err := NewREST(p.s.REST)
		if err != nil {
			var zero T
			return zero, err
		}
		v, err := fn(ctx, rest)
		return v, classify(err)
	})
}

func (p *checkProbes) getAccount(ctx context.Context) (Account, error) {
	return get(ctx, p, &p.account, func(ctx context.Context, r *REST) (Account, error) { return r.Account(ctx) })
}

func (p *checkProbes) credentials(ctx context.Context) doctor.Result {
	a, err := p.getAccount(ctx)
	api := cmp.Or(p.s.REST.BaseURL, DefaultRESTURL)
	var pe *voice.ProviderError
	switch {
	case err == nil:
		return doctor.OKResult(fmt.Sprintf("the credentials work (%s, %s account, credit %s)", cmp.Or(a.Name, a.AuthID), cmp.Or(a.AccountType, "?"), cmp.Or(a.CashCredits, "?")))
	case !errors.As(err, &pe):
		return doctor.FailResult(err.Error(), "set PLIVO_AUTH_ID and PLIVO_AUTH_TOKEN from "+ConsoleKeys)
	case errors.Is(err, carrier.ErrAuth):
		return doctor.FailResult(fmt.Sprintf("Plivo refuses the credentials (PLIVO_AUTH_ID and PLIVO_AUTH_TOKEN, from %s)", p.origin("PLIVO_AUTH_TOKEN")),
			"copy both again from "+ConsoleKeys)
	case pe.Status == 0:
		return doctor.FailResult("cannot reach Plivo at "+api+": "+err.Error(), "check this machine's network, https://status.plivo.com and HANDSET_PLIVO_API_URL")
	}
	return doctor.FailResult("Plivo answered: "+err.Error(), "check https://status.plivo.com and the account in "+Console)
}

func (p *checkProbes) application(ctx context.Context) doctor.Result {
	if p.s.AppID == "" {
		return doctor.FailResult("PLIVO_APP_ID is not set: Handset has no application for its numbers' calls",
			"create an application in "+ConsoleApplications+" and copy its App ID into PLIVO_APP_ID")
	}
	if _, err := p.getAccount(ctx); err != nil {
		return doctor.SkipResult("not checked (see plivo credentials)")
	}
	app, err := get(ctx, p, &p.app, func(ctx context.Context, r *REST) (Application, error) { return r.Application(ctx, p.s.AppID) })
	switch {
	case errors.Is(err, carrier.ErrNotFound):
		return doctor.FailResult(fmt.Sprintf("the account has no application %s (PLIVO_APP_ID, from %s)", p.s.AppID, p.origin("PLIVO_APP_ID")),
			"copy an App ID from "+ConsoleApplications)
	case err != nil:
		return doctor.FailResult("cannot read the application: "+err.Error(), "check the Plivo settings and this machine's network")
	}
	public := strings.TrimRight(p.s.PublicURL, "/")
	if p.s.PublicPlaceholder || public == "" {
		return doctor.WarnResult(fmt.Sprintf("the application answers at %s; HANDSET_PUBLIC_URL is not set to Handset's address, so doctor cannot tell whether that is Handset",
			cmp.Or(app.AnswerURL, "nowhere")), "set HANDSET_PUBLIC_URL to your tunnel's or domain's https address, then "+p.attach())
	}
	for _, u := range []struct{ name, got, want string }{
		{"answer URL", app.AnswerURL, public + AnswerPath},
		{"hangup URL", app.HangupURL, public + HangupPath},
	} {
		if !carrier.SameWebhookURL(u.got, u.want) {
			return doctor.FailResult(fmt.Sprintf("the application's %s is %s, not %s", u.name, cmp.Or(u.got, "unset"), u.want),
				p.attach()+" (every number on the application follows)")
		}
	}
	return doctor.OKResult(fmt.Sprintf("%s (%s) answers at %s", cmp.Or(app.AppName, app.AppID), app.AppID, public+AnswerPath))
}

func (p *checkProbes) phoneNumber(ctx context.Context) doctor.Result {
	if p.s.PhoneNumber == "" {
		return doctor.WarnResult("HANDSET_PHONE_NUMBER is not set: doctor cannot check which number rings Handset, and outbound calls have no caller id",
			"set HANDSET_PHONE_NUMBER to your Plivo number in E.164 form, like +14155550100")
	}
	if _, err := p.getAccount(ctx); err != nil {
		return doctor.SkipResult("not checked (see plivo credentials)")
	}
	n, err := get(ctx, p, &p.number, func(ctx context.Context, r *REST) (Number, error) { return r.FindNumber(ctx, p.s.PhoneNumber) })
	switch {
	case errors.Is(err, carrier.ErrNotFound) || errors.Is(err, carrier.ErrInvalid):
		return doctor.FailResult(fmt.Sprintf("%s (HANDSET_PHONE_NUMBER, from %s) is not a number of the account", p.s.PhoneNumber, p.origin("HANDSET_PHONE_NUMBER")),
			"set HANDSET_PHONE_NUMBER to one of the account's numbers, or buy one in "+ConsoleBuyNumbers)
	case err != nil:
		return doctor.FailResult("cannot look the number up: "+err.Error(), "check the Plivo settings and this machine's network")
	case p.s.AppID != "" && n.AppID() != p.s.AppID:
		return doctor.FailResult(fmt.Sprintf("%s is linked to application %s, not %s: its calls do not reach Handset", p.s.PhoneNumber, cmp.Or(n.AppID(), "(none)"), p.s.AppID),
			p.attach())
	}
	return doctor.OKResult(fmt.Sprintf("%s is linked to application %s", p.s.PhoneNumber, cmp.Or(n.AppID(), "(none)")))
}

func (p *checkProbes) publicURL(context.Context) doctor.Result {
	u, err := url.Parse(p.s.PublicURL)
	switch {
	case p.s.PublicURL == "":
		return doctor.SkipResult("HANDSET_PUBLIC_URL is not set")
	case err != nil || u.Host == "":
		return doctor.FailResult(fmt.Sprintf("HANDSET_PUBLIC_URL %q is not a URL", p.s.PublicURL), "set it to the https address Plivo reaches Handset at")
	case u.Scheme != "https":
		return doctor.WarnResult(fmt.Sprintf("HANDSET_PUBLIC_URL is %s, not https: the audio stream would be unencrypted ws://", u.Scheme),
			"serve Handset behind https (a tunnel or a reverse proxy) and set HANDSET_PUBLIC_URL to that address")
	}
	return doctor.OKResult(p.s.PublicURL)
}
