package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/store/postgres"
)

// ---- store ----

func (d *doctorRun) storeChecks() []doctor.Check {
	cs := []doctor.Check{doctor.Local(secStore, "data dir", func(context.Context) doctor.Result { return d.dataDir() })}
	if d.cfg.DatabaseURL.IsSet() {
		cs = append(cs, doctor.Net(secStore, "database", d.database))
	}
	cs = append(cs, doctor.Local(secStore, "jobs", func(context.Context) doctor.Result { return d.jobSettings() }))
	return cs
}

// database connects to HANDSET_DATABASE_URL and reads its schema version.
func (d *doctorRun) database(ctx context.Context) doctor.Result {
	sc, err := postgres.Inspect(ctx, d.cfg.DatabaseURL.Reveal())
	fix := "check HANDSET_DATABASE_URL (" + d.origin("HANDSET_DATABASE_URL") + "): the host, port, user, password and database name, and that PostgreSQL accepts connections from here"
	switch {
	case err != nil:
		return doctor.FailResult("cannot reach the database: "+redactURL(err.Error(), d.cfg.DatabaseURL.Reveal()), fix)
	case sc.Version > sc.Newest:
		return doctor.FailResult(fmt.Sprintf("the database is at schema version %d, newer than this Handset knows (%d)", sc.Version, sc.Newest),
			"upgrade handset on this node to the version the other nodes run")
	case sc.Version == 0:
		return doctor.OKResult("reachable and empty: handset serve creates the tables")
	case sc.Version < sc.Newest:
		return doctor.OKResult(fmt.Sprintf("reachable at schema version %d; handset serve migrates it to %d", sc.Version, sc.Newest))
	}
	return doctor.OKResult(fmt.Sprintf("reachable, schema version %d", sc.Version))
}

// redactURL keeps a database password out of an error text.
func redactURL(msg, raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

// jobSettings checks the settings outbound calls, transfers and handoffs read, which
// serve would otherwise only refuse at start.
func (d *doctorRun) jobSettings() doctor.Result {
	cfg := d.cfg
	var problems, notes []string
	if _, err := jobs.ParseQuietHours(cfg.Outbound.QuietHours, cfg.Outbound.QuietZone); err != nil {
		problems = append(problems, "HANDSET_QUIET_HOURS: "+err.Error())
	}
	allow, err := jobs.ParseAllowList(cfg.Handoff.TransferAllow)
	switch {
	case err != nil:
		problems = append(problems, "HANDSET_TRANSFER_ALLOW: "+err.Error())
	case len(allow) == 0:
		notes = append(notes, "no transfers allowed (HANDSET_TRANSFER_ALLOW is empty)")
	default:
		notes = append(notes, fmt.Sprintf("transfers allowed to %d numbers or prefixes", len(allow)))
	}
	if _, err := jobs.ParseAllowList(cfg.Outbound.CallAllow); err != nil {
		problems = append(problems, "HANDSET_CALL_ALLOW: "+err.Error())
	}
	if len(problems) > 0 {
		return doctor.FailResult(strings.Join(problems, "; "), "fix the settings named; `handset serve` refuses to start with them")
	}
	var missing []string
	if c := chosenCarrier(cfg); !c.Configured(cfg) {
		missing = append(missing, c.AccountSettings)
	}
	if cfg.PhoneNumber == "" {
		missing = append(missing, "HANDSET_PHONE_NUMBER")
	}
	if cfg.PublicURL == "" {
		missing = append(missing, "HANDSET_PUBLIC_URL")
	}
	if len(missing) > 0 {
		notes = append(notes, "outbound calls and deliveries need "+strings.Join(missing, ", "))
	} else {
		notes = append(notes, "outbound calls can be placed")
	}
	if cfg.Handoff.URL == "" {
		notes = append(notes, "no channel handoffs (HANDSET_HANDOFF_URL is empty)")
	}
	return doctor.OKResult(strings.Join(notes, "; "))
}

// dataDir checks that HANDSET_DATA_DIR exists and is writable, or can be created.
func (d *doctorRun) dataDir() doctor.Result {
	dir := d.cfg.DataDir
	shown := dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(cmpOrDot(d.env.WorkDir), dir)
	}
	fix := "set HANDSET_DATA_DIR (now " + shown + ", from " + d.origin("HANDSET_DATA_DIR") + ") to a folder this user can write, or fix its permissions"
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return doctor.FailResult(shown+" is a file, not a folder", fix)
	case err == nil:
		if err := probeWrite(dir); err != nil {
			return doctor.FailResult("cannot write in "+shown+": "+err.Error(), fix)
		}
		return doctor.OKResult(shown + " is writable (call journals go in " + filepath.Join(shown, "calls") + ")")
	case !errors.Is(err, os.ErrNotExist):
		return doctor.FailResult("cannot use "+shown+": "+err.Error(), fix)
	}
	// Not there yet: serve creates it, if the nearest existing parent lets it.
	parent := filepath.Dir(dir)
	for {
		pst, err := os.Stat(parent)
		switch {
		case err == nil && !pst.IsDir():
			return doctor.FailResult(shown+" cannot be created: "+parent+" is a file", fix)
		case err == nil:
			if err := probeWrite(parent); err != nil {
				return doctor.FailResult(shown+" does not exist and cannot be created in "+parent+": "+err.Error(), fix)
			}
			return doctor.OKResult(shown + " does not exist yet; handset serve creates it")
		case !errors.Is(err, os.ErrNotExist):
			return doctor.FailResult(shown+" cannot be created: "+err.Error(), fix)
		}
		next := filepath.Dir(parent)
		if next == parent {
			return doctor.FailResult(shown+" cannot be created: no parent folder exists", fix)
		}
		parent = next
	}
}

// probeWrite creates and removes a small file in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".handset-doctor-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// ---- carrier ----

// carrierChecks are the own checks of each carrier begun in the settings (of every carrier,
// each saying it is not configured, when none is).
func (d *doctorRun) carrierChecks() []doctor.Check {
	_, placeholder := placeholderURL(strings.TrimRight(d.cfg.PublicURL, "/"))
	carriers := registry.All[registry.Carrier]()
	begun := slices.ContainsFunc(carriers, func(c registry.Carrier) bool { return c.Started != nil && c.Started(d.cfg) })
	var cs []doctor.Check
	for _, c := range carriers {
		// A carrier nobody set up says so only when none is: beside one that is, its
		// "not configured" would be noise (and "browser calls only" untrue).
		if c.Checks == nil || (begun && (c.Started == nil || !c.Started(d.cfg))) {
			continue
		}
		p := d.providerProbe(secCarrier, "")
		p.PublicURLPlaceholder = placeholder
		cs = append(cs, c.Checks(p)...)
	}
	return cs
}

// ---- public URL ----

func (d *doctorRun) publicChecks() []doctor.Check {
	cfg := d.cfg
	phone := chosenCarrier(cfg)
	// A carrier with listeners of its own (a SIP trunk) reaches Handset there, not at its URL.
	phoneOn := phone.Started(cfg) && phone.Listen == nil
	public := strings.TrimRight(cfg.PublicURL, "/")
	if public == "" {
		if phoneOn {
			return []doctor.Check{doctor.Fixed(secPublic, "address", doctor.FailResult("HANDSET_PUBLIC_URL is not set: "+phone.Title+" needs an address to reach Handset, and webhook signatures are checked against it",
				"set HANDSET_PUBLIC_URL to the https address of your tunnel or domain, like https://voice.example.com"))}
		}
		return []doctor.Check{doctor.Fixed(secPublic, "address", doctor.SkipResult("not set: browser calls on this machine only"))}
	}
	u, err := url.Parse(public)
	why, placeholder := placeholderURL(public)
	var addr doctor.Result
	switch {
	case err != nil:
		addr = doctor.FailResult("HANDSET_PUBLIC_URL does not parse: "+err.Error(), "set it like https://voice.example.com")
	case placeholder:
		addr = placeholderResult(public, why, d.origin("HANDSET_PUBLIC_URL"), phone, phoneOn)
	case u.Scheme != "https" && phoneOn:
		addr = doctor.FailResult(public+" is not https: "+phone.Title+"'s media streams need wss://, which Handset derives from it",
			"put Handset behind TLS (a tunnel such as cloudflared or ngrok, or a reverse proxy) and set HANDSET_PUBLIC_URL to its https:// address")
	case phoneOn && (doctor.IsLoopbackHost(u.Hostname()) || isPrivateHost(u.Hostname())):
		addr = doctor.WarnResult(public+" is not an internet address ("+u.Hostname()+" is this machine or a private network): "+phone.Title+" cannot reach it, so real calls fail",
			"set HANDSET_PUBLIC_URL to the public https address of your tunnel or domain (fine as it is against a local fake)")
	case isLocalhostName(u.Hostname()):
		// Without a carrier: a public address naming this machine is a leftover placeholder.
		addr = placeholderResult(public, "localhost is this machine, which nothing else reaches at that name", d.origin("HANDSET_PUBLIC_URL"), phone, false)
	case u.Scheme != "https" && !doctor.IsLoopback(public):
		addr = doctor.WarnResult(public+" is not https: browsers only allow the microphone on https pages (or localhost)",
			"serve Handset over TLS and set HANDSET_PUBLIC_URL to its https:// address")
	default:
		addr = doctor.OKResult(public + " (" + d.origin("HANDSET_PUBLIC_URL") + ")")
	}
	if placeholder {
		// No lookup: a reserved name reaches no server, and saying so adds nothing.
		return []doctor.Check{doctor.Fixed(secPublic, "address", addr),
			doctor.Fixed(secPublic, "reachable", doctor.SkipResult("not checked: "+public+" is a placeholder (see address)"))}
	}
	listen := cfg.Listen
	return []doctor.Check{
		doctor.Fixed(secPublic, "address", addr),
		doctor.Net(secPublic, "reachable", func(ctx context.Context) doctor.Result {
			a, err := d.get(ctx, public+"/healthz", nil)
			switch {
			case err != nil && netfail.IsCertificate(err):
				return doctor.FailResult(public+" answers, but "+netfail.Describe(err), "give the tunnel or proxy a valid certificate for its host name")
			case err != nil:
				return doctor.WarnResult(public+" is not reachable: "+netfail.Describe(err)+": start handset serve and your tunnel",
					"start handset serve (it listens on "+listen+") and the tunnel or proxy that forwards "+public+" to it, then run doctor again")
			case a.status != http.StatusOK || strings.TrimSpace(string(a.body)) != "ok":
				return doctor.FailResult(fmt.Sprintf("something else answers at %s/healthz (HTTP %d: %s)", public, a.status, doctor.Snippet(a.body)),
					"point the tunnel or proxy for "+public+" at handset serve on "+listen)
			}
			return doctor.OKResult("Handset answers at " + public + "/healthz")
		}),
	}
}

// placeholderURL says whether raw's host is a name reserved for examples and tests
// (RFC 2606, RFC 6761), such as the https://voice.example.com handset setup writes, and
// why it cannot be this Handset's public address. (localhost is reserved too; the address
// check treats it apart, since a local fake can reach it.)
func placeholderURL(raw string) (why string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", false
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, d := range placeholderDomains {
		if h == d || strings.HasSuffix(h, "."+d) {
			return d + " is reserved for examples: it is never your server", true
		}
	}
	for _, tld := range []string{"example", "invalid", "test"} {
		if h == tld || strings.HasSuffix(h, "."+tld) {
			return "." + tld + " names are reserved: they never lead to your server", true
		}
	}
	return "", false
}

// placeholderDomains are the domains reserved for examples. A variable only for the
// doctor tests, whose TLS fake answers as example.com (the name httptest's certificate
// carries).
var placeholderDomains = []string{"example.com", "example.net", "example.org"}

// placeholderResult is the public_url address check for a placeholder: a failure when
// the phone carrier needs the address, a warning when only the browser page is in use.
func placeholderResult(public, why, origin string, phone registry.Carrier, phoneOn bool) doctor.Result {
	detail := public + " is a placeholder to replace (" + why + ")"
	set := "replace HANDSET_PUBLIC_URL (public_url, from " + origin + ") with the https address of your tunnel or domain"
	if phoneOn {
		return doctor.FailResult(detail+": "+phone.Title+" cannot reach Handset there", set+", then run handset attach-number")
	}
	return doctor.WarnResult(detail, set+"; or remove it: browser calls on this machine need no public address")
}

// isLocalhostName: localhost and its subdomains, the name (not an address) of this machine.
func isLocalhostName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}
