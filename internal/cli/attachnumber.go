package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/twilio"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/voice"
)

// Handset's Twilio routes, as INTERFACE.md names them, and where the account SID and auth
// token are shown.
const (
	twilioVoicePath  = twilio.VoicePath
	twilioStatusPath = twilio.StatusPath
	twilioConsole    = twilio.ConsoleAccountInfo
)

// twilioCarrier builds Twilio's control API from the configuration. Its errors name
// TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN and say where to find them.
func twilioCarrier(cfg *config.Config) (*twilio.Control, error) {
	sid, token := cfg.Twilio.AccountSID, cfg.Twilio.AuthToken
	switch {
	case sid == "" && !token.IsSet():
		return nil, fmt.Errorf("Twilio is not configured: set TWILIO_ACCOUNT_SID (AC…) and TWILIO_AUTH_TOKEN, in the environment or .env; copy both from %s", twilioConsole)
	case sid == "":
		return nil, fmt.Errorf("TWILIO_ACCOUNT_SID is not set: copy the Account SID (AC…) that goes with TWILIO_AUTH_TOKEN from %s", twilioConsole)
	case !token.IsSet():
		return nil, fmt.Errorf("TWILIO_AUTH_TOKEN is not set: copy the Auth Token of account %s from %s", sid, twilioConsole)
	}
	c, err := twilio.NewControl(twilio.RESTOptions{
		BaseURL:    cfg.Twilio.APIURL,
		AccountSID: sid,
		AuthToken:  token.Reveal(),
	})
	if err != nil {
		return nil, fmt.Errorf("%w (the Account SID and Auth Token are under Account Info at https://console.twilio.com)", err)
	}
	return c, nil
}

// explainTwilio turns a REST failure into an error that says what to do about it.
func explainTwilio(cfg *config.Config, tw *twilio.Control, err error) error {
	rest := tw.REST()
	var nf *twilio.NumberNotFoundError
	if errors.As(err, &nf) {
		hint := "run `handset numbers` to see them with their voice URLs"
		if len(nf.Have) == 0 {
			hint = "buy a number with voice capability in the Twilio console, then run `handset numbers`"
		}
		return fmt.Errorf("%s\nhint: %s", nf.Error(), hint)
	}
	at := ""
	if rest.BaseURL() != twilio.DefaultRESTURL {
		at = " at " + rest.BaseURL() + " (HANDSET_TWILIO_API_URL)"
	}
	switch voice.KindOf(err) {
	case voice.KindAuth:
		return fmt.Errorf("Twilio%s refused the credentials: the auth token (TWILIO_AUTH_TOKEN, from %s) was rejected for account %s (TWILIO_ACCOUNT_SID, from %s)\n"+
			"hint: copy the Account SID and the Auth Token of the same account from %s; after rotating the token, use the new primary one\n(%v)",
			at, cfg.Source("TWILIO_AUTH_TOKEN"), rest.AccountSID(), cfg.Source("TWILIO_ACCOUNT_SID"), twilioConsole, err)
	case voice.KindTimeout, voice.KindTransient:
		return fmt.Errorf("could not reach Twilio%s: %w\nhint: check the network, https://status.twilio.com, and HANDSET_TWILIO_API_URL if you set it; then try again", at, err)
	case voice.KindQuota:
		return fmt.Errorf("Twilio%s is refusing requests for now (rate limit or account balance): %w\nhint: wait a minute and try again; check the balance in the Twilio console", at, err)
	}
	return err
}

type attachFlags struct {
	url, statusCallback string
	asJSON              bool
}

// attachReport is what `handset attach-number --json` prints.
type attachReport struct {
	PhoneNumber string     `json:"phone_number"`
	SID         string     `json:"sid"`
	Before      numberView `json:"before"`
	After       numberView `json:"after"`
	Warnings    []string   `json:"warnings,omitempty"`
	Notes       []string   `json:"notes,omitempty"`
}

func runAttachNumber(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("attach-number", env)
	var f attachFlags
	fs.StringVar(&f.url, "url", "", "voice webhook `URL` Twilio calls for each incoming call (default HANDSET_PUBLIC_URL + /twilio/voice)")
	fs.StringVar(&f.statusCallback, "status-callback", "", "call status `URL` (default HANDSET_PUBLIC_URL + /twilio/status when set; otherwise left as it is)")
	fs.BoolVar(&f.asJSON, "json", false, "print a JSON report instead of text")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: handset attach-number NUMBER [--url URL] [--status-callback URL]")
		fmt.Fprintln(fs.Output(), "\nPoints the Twilio number's voice webhook at Handset (method POST) and clears any TwiML app on it.")
		fs.PrintDefaults()
	}
	positional, err := parseAttachArgs(fs, args)
	if err != nil {
		return err
	}
	example := "handset attach-number +14155550100 --url https://voice.example.com/twilio/voice"
	switch len(positional) {
	case 0:
		return &usageError{msg: "missing NUMBER: the Twilio phone number to point at Handset",
			hint: example + " (`handset numbers` lists the account's numbers)"}
	case 1:
	default:
		return &usageError{msg: fmt.Sprintf("one NUMBER at a time, got %d: %s", len(positional), strings.Join(positional, " ")),
			hint: example}
	}
	number, err := carrier.NormalizeNumber(positional[0])
	if err != nil {
		return &usageError{msg: err.Error(), hint: example}
	}

	cfg, err := loadConfig(env, g, nil)
	if err != nil {
		return err
	}
	warnSettings(newLogger(env.Stderr, cfg), cfg)
	if err := cfg.Validate(config.ValidateOptions{}); err != nil {
		return err
	}
	publicBase := strings.TrimRight(cfg.PublicURL, "/")

	var warnings []string
	voiceURL := f.url
	if voiceURL == "" {
		if publicBase == "" {
			return &usageError{msg: "no voice URL: pass --url, or set HANDSET_PUBLIC_URL so the URL is HANDSET_PUBLIC_URL" + twilioVoicePath,
				hint: "set HANDSET_PUBLIC_URL to the public https address Twilio reaches Handset at (a tunnel such as `cloudflared tunnel --url http://127.0.0.1:8080` gives you one), or " + example}
		}
		voiceURL = publicBase + twilioVoicePath
	}
	w, err := checkWebhookURL("--url", voiceURL, twilioVoicePath)
	if err != nil {
		return err
	}
	warnings = append(warnings, w...)
	statusURL := f.statusCallback
	if statusURL == "" && publicBase != "" {
		statusURL = publicBase + twilioStatusPath
	}
	if statusURL != "" {
		w, err := checkWebhookURL("--status-callback", statusURL, twilioStatusPath)
		if err != nil {
			return err
		}
		warnings = append(warnings, w...)
	}

	tw, err := twilioCarrier(cfg)
	if err != nil {
		return err
	}
	var c carrier.Carrier = tw // the same steps for any carrier
	found, err := c.Number(ctx, number)
	if err != nil {
		return explainTwilio(cfg, tw, err)
	}
	attached, err := c.Attach(ctx, found, voiceURL, statusURL)
	if err != nil {
		return explainTwilio(cfg, tw, err)
	}
	before, after := numberViewOf(found), numberViewOf(attached)
	if after.VoiceURL != voiceURL || after.VoiceApplicationSID != "" || !strings.EqualFold(after.VoiceMethod, "POST") {
		return fmt.Errorf("Twilio accepted the update of %s but now shows voice URL %s %q and TwiML app %q, not POST %q: run `handset numbers` to look again",
			number, after.VoiceMethod, after.VoiceURL, after.VoiceApplicationSID, voiceURL)
	}

	for _, w := range warnings {
		fmt.Fprintln(env.Stderr, "warning: "+w)
	}
	notes := attachNotes(cfg, number, voiceURL, publicBase)
	if f.asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(attachReport{PhoneNumber: number, SID: before.SID, Before: before, After: after,
			Warnings: warnings, Notes: notes})
	}
	printAttach(env.Stdout, tw.REST().AccountSID(), before, after)
	fmt.Fprintf(env.Stdout, "Calls to %s now reach Handset at %s.\n", number, voiceURL)
	for _, n := range notes {
		fmt.Fprintln(env.Stdout, "note: "+n)
	}
	return nil
}

// parseAttachArgs parses flags that may come before or after the positional arguments
// (`attach-number +1… --url …`), and returns the positional ones.
func parseAttachArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil // everything after -- is positional
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// checkWebhookURL checks a URL Twilio is to call: absolute http(s), https unless the host
// is loopback. It returns warnings about URLs Twilio cannot reach or that miss Handset's
// route; a refused URL is a usage error.
func checkWebhookURL(flagName, raw, route string) (warnings []string, err error) {
	u, perr := url.Parse(raw)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, &usageError{msg: fmt.Sprintf("%s %q is not an absolute http(s) URL", flagName, raw),
			hint: "write the whole URL, like https://voice.example.com" + route}
	}
	if u.User != nil {
		return nil, &usageError{msg: fmt.Sprintf("%s %s carries a user name or password: Twilio would send it in every request", flagName, u.Redacted()),
			hint: "drop the user:password@ part; Handset checks X-Twilio-Signature instead"}
	}
	host := u.Hostname()
	loopback := doctor.IsLoopbackHost(host)
	if u.Scheme == "http" && !loopback {
		return nil, &usageError{msg: fmt.Sprintf("refusing %s %s: over plain http the caller's audio and Handset's stream token would cross the internet unencrypted", flagName, raw),
			hint: "use https:// (a reverse proxy with TLS in front of Handset, or a tunnel such as `cloudflared tunnel --url http://127.0.0.1:8080`, gives you an https URL)"}
	}
	switch {
	case loopback:
		warnings = append(warnings, fmt.Sprintf("Twilio cannot reach %s: %s is this machine, not an internet address, so real calls will fail until %s is a public URL (fine against a local fake or proxy)", raw, host, flagName))
	case isPrivateHost(host):
		warnings = append(warnings, fmt.Sprintf("Twilio cannot reach %s: %s is a private network address; use the public URL of Handset", raw, host))
	}
	if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), route) {
		warnings = append(warnings, fmt.Sprintf("Handset answers Twilio at %s, but %s ends in %q: fine behind a proxy that rewrites paths, otherwise use …%s", route, raw, u.Path, route))
	}
	return warnings, nil
}

func isPrivateHost(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified())
}

// attachNotes are the follow-ups after a successful attach.
func attachNotes(cfg *config.Config, number, voiceURL, publicBase string) []string {
	var notes []string
	switch {
	case cfg.PhoneNumber == "":
		notes = append(notes, fmt.Sprintf("set HANDSET_PHONE_NUMBER=%s so outbound calls come from this number", number))
	case cfg.PhoneNumber != number:
		notes = append(notes, fmt.Sprintf("HANDSET_PHONE_NUMBER is %s, so outbound calls come from that number, not %s", cfg.PhoneNumber, number))
	}
	if publicBase == "" {
		if base, ok := strings.CutSuffix(voiceURL, twilioVoicePath); ok {
			notes = append(notes, fmt.Sprintf("set HANDSET_PUBLIC_URL=%s so Handset checks Twilio's signatures against the URL Twilio calls", base))
		} else {
			notes = append(notes, "set HANDSET_PUBLIC_URL to the public base URL Twilio calls, so Handset checks Twilio's signatures against it")
		}
	}
	return notes
}

// printAttach prints the number's settings before → after.
func printAttach(w io.Writer, account string, before, after numberView) {
	fmt.Fprintf(w, "%s (%s, account %s):\n", after.PhoneNumber, after.SID, account)
	row := func(label, from, to string) {
		if from == to {
			fmt.Fprintf(w, "  %-16s %s (unchanged)\n", label, to)
			return
		}
		fmt.Fprintf(w, "  %-16s %s → %s\n", label, from, to)
	}
	row("voice URL", methodURL(before.VoiceMethod, before.VoiceURL), methodURL(after.VoiceMethod, after.VoiceURL))
	if before.VoiceApplicationSID != "" || after.VoiceApplicationSID != "" {
		row("TwiML app", orNone(before.VoiceApplicationSID, "(none)"), orNone(after.VoiceApplicationSID, "(cleared)"))
	}
	row("status callback", orNone(before.StatusCallback, "(none)"), orNone(after.StatusCallback, "(none)"))
}

func methodURL(method, u string) string {
	if u == "" {
		return "(none)"
	}
	if method == "" {
		method = "POST"
	}
	return method + " " + u
}

func orNone(v, none string) string {
	if v == "" {
		return none
	}
	return v
}
