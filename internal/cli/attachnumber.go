package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
)

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
	first := firstCarrier()
	hooks := first.Numbers.Webhooks
	fs.StringVar(&f.url, "url", "", "voice webhook `URL` "+first.Title+" calls for each incoming call (default HANDSET_PUBLIC_URL + "+hooks.VoicePath+")")
	fs.StringVar(&f.statusCallback, "status-callback", "", "call status `URL` (default HANDSET_PUBLIC_URL + "+hooks.StatusPath+" when set; otherwise left as it is)")
	fs.BoolVar(&f.asJSON, "json", false, "print a JSON report instead of text")
	carrierName := carrierFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: handset attach-number NUMBER [--carrier NAME] [--url URL] [--status-callback URL]")
		fmt.Fprintf(fs.Output(), "\nPoints the %s number's voice webhook at Handset (method POST) and clears any %s on it.\n", first.Title, first.Numbers.Override)
		fs.PrintDefaults()
	}
	positional, err := parseAttachArgs(fs, args)
	if err != nil {
		return err
	}
	example := "handset attach-number +14155550100 --url https://voice.example.com" + hooks.VoicePath
	switch len(positional) {
	case 0:
		return &usageError{msg: "missing NUMBER: the " + first.Title + " phone number to point at Handset",
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

	overrides, err := carrierOverride(*carrierName)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(env, g, overrides)
	if err != nil {
		return err
	}
	warnSettings(newLogger(env.Stderr, cfg), cfg)
	if err := cfg.Validate(config.ValidateOptions{}); err != nil {
		return err
	}
	entry := chosenCarrier(cfg)
	hooks = entry.Numbers.Webhooks
	publicBase := strings.TrimRight(cfg.PublicURL, "/")

	var warnings []string
	voiceURL := f.url
	if voiceURL == "" {
		if publicBase == "" {
			return &usageError{msg: "no voice URL: pass --url, or set HANDSET_PUBLIC_URL so the URL is HANDSET_PUBLIC_URL" + hooks.VoicePath,
				hint: "set HANDSET_PUBLIC_URL to the public https address " + entry.Title + " reaches Handset at (a tunnel such as `cloudflared tunnel --url http://127.0.0.1:8080` gives you one), or " + example}
		}
		voiceURL = hooks.VoiceURL(publicBase)
	}
	w, err := checkWebhookURL(entry, "--url", voiceURL, hooks.VoicePath)
	if err != nil {
		return err
	}
	warnings = append(warnings, w...)
	statusURL := f.statusCallback
	if statusURL == "" {
		statusURL = hooks.StatusURL(publicBase)
	}
	if statusURL != "" {
		w, err := checkWebhookURL(entry, "--status-callback", statusURL, hooks.StatusPath)
		if err != nil {
			return err
		}
		warnings = append(warnings, w...)
	}

	c, err := entry.Numbers.Open(cfg)
	if err != nil {
		return err
	}
	found, err := c.Number(ctx, number)
	if err != nil {
		return entry.Numbers.Explain(cfg, err)
	}
	attached, err := c.Attach(ctx, found, voiceURL, statusURL)
	if err != nil {
		return entry.Numbers.Explain(cfg, err)
	}
	before, after := numberViewOf(found), numberViewOf(attached)
	if after.VoiceURL != voiceURL || after.VoiceApplicationSID != "" || !strings.EqualFold(after.VoiceMethod, "POST") {
		return fmt.Errorf("%s accepted the update of %s but now shows voice URL %s %q and %s %q, not POST %q: run `handset numbers` to look again",
			entry.Title, number, after.VoiceMethod, after.VoiceURL, entry.Numbers.Override, after.VoiceApplicationSID, voiceURL)
	}

	warnings = append(warnings, sharedWebhookWarnings(ctx, c, number)...)

	for _, w := range warnings {
		fmt.Fprintln(env.Stderr, "warning: "+w)
	}
	notes := attachNotes(entry, cfg, number, voiceURL, publicBase)
	if f.asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(attachReport{PhoneNumber: number, SID: before.SID, Before: before, After: after,
			Warnings: warnings, Notes: notes})
	}
	printAttach(env.Stdout, entry.Numbers, entry.Numbers.AccountID(cfg), before, after)
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

// checkWebhookURL checks a URL carrier c is to call: absolute http(s), https unless the
// host is loopback. It returns warnings about URLs the carrier cannot reach or that miss
// Handset's route; a refused URL is a usage error.
func checkWebhookURL(c registry.Carrier, flagName, raw, route string) (warnings []string, err error) {
	u, perr := url.Parse(raw)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, &usageError{msg: fmt.Sprintf("%s %q is not an absolute http(s) URL", flagName, raw),
			hint: "write the whole URL, like https://voice.example.com" + route}
	}
	if u.User != nil {
		return nil, &usageError{msg: fmt.Sprintf("%s %s carries a user name or password: %s would send it in every request", flagName, u.Redacted(), c.Title),
			hint: "drop the user:password@ part; Handset checks " + c.Numbers.SignatureHeader + " instead"}
	}
	host := u.Hostname()
	loopback := doctor.IsLoopbackHost(host)
	if u.Scheme == "http" && !loopback {
		return nil, &usageError{msg: fmt.Sprintf("refusing %s %s: over plain http the caller's audio and Handset's stream token would cross the internet unencrypted", flagName, raw),
			hint: "use https:// (a reverse proxy with TLS in front of Handset, or a tunnel such as `cloudflared tunnel --url http://127.0.0.1:8080`, gives you an https URL)"}
	}
	switch {
	case loopback:
		warnings = append(warnings, fmt.Sprintf("%s cannot reach %s: %s is this machine, not an internet address, so real calls will fail until %s is a public URL (fine against a local fake or proxy)", c.Title, raw, host, flagName))
	case isPrivateHost(host):
		warnings = append(warnings, fmt.Sprintf("%s cannot reach %s: %s is a private network address; use the public URL of Handset", c.Title, raw, host))
	}
	if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), route) {
		warnings = append(warnings, fmt.Sprintf("Handset answers %s at %s, but %s ends in %q: fine behind a proxy that rewrites paths, otherwise use …%s", c.Title, route, raw, u.Path, route))
	}
	return warnings, nil
}

func isPrivateHost(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified())
}

// attachNoticer is a carrier whose webhook URL belongs to something several numbers share
// (an application), so attaching one number moves the others' calls too.
type attachNoticer interface {
	// AttachNotice says which numbers besides except now reach the same URL ("" for none).
	AttachNotice(ctx context.Context, except string) (string, error)
}

// sharedWebhookWarnings are the warnings about the other numbers attaching number moved
// along with it, when the carrier shares one webhook URL between numbers.
func sharedWebhookWarnings(ctx context.Context, c carrier.Carrier, number string) []string {
	n, ok := c.(attachNoticer)
	if !ok {
		return nil
	}
	notice, err := n.AttachNotice(ctx, number)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("could not list the other numbers whose calls now reach Handset too: %v (run `handset numbers` to see them)", err)}
	case notice != "":
		return []string{notice}
	}
	return nil
}

// attachNotes are the follow-ups after a successful attach.
func attachNotes(c registry.Carrier, cfg *config.Config, number, voiceURL, publicBase string) []string {
	var notes []string
	switch {
	case cfg.PhoneNumber == "":
		notes = append(notes, fmt.Sprintf("set HANDSET_PHONE_NUMBER=%s so outbound calls come from this number", number))
	case cfg.PhoneNumber != number:
		notes = append(notes, fmt.Sprintf("HANDSET_PHONE_NUMBER is %s, so outbound calls come from that number, not %s", cfg.PhoneNumber, number))
	}
	if publicBase == "" {
		if base, ok := strings.CutSuffix(voiceURL, c.Numbers.Webhooks.VoicePath); ok {
			notes = append(notes, fmt.Sprintf("set HANDSET_PUBLIC_URL=%s so Handset checks %s's signatures against the URL %s calls", base, c.Title, c.Title))
		} else {
			notes = append(notes, fmt.Sprintf("set HANDSET_PUBLIC_URL to the public base URL %s calls, so Handset checks %s's signatures against it", c.Title, c.Title))
		}
	}
	return notes
}

// printAttach prints the number's settings before → after.
func printAttach(w io.Writer, nm registry.Numbers, account string, before, after numberView) {
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
		row(nm.Override, orNone(before.VoiceApplicationSID, "(none)"), orNone(after.VoiceApplicationSID, "(cleared)"))
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
