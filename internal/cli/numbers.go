package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/registry"
)

// Where a number's voice webhook leads, as `handset numbers` reports it.
const (
	voiceAtHandset    = "handset"     // POST to Handset's voice webhook under HANDSET_PUBLIC_URL
	voiceHandsetGET   = "handset_get" // Handset's URL, but with GET, which Handset refuses
	voiceElsewhere    = "elsewhere"   // another URL
	voiceOverridden   = "twiml_app"   // something overrides the voice URL (named for Twilio's TwiML app)
	voiceNone         = "none"        // no voice URL at all
	voiceUnknownOwner = "unknown"     // HANDSET_PUBLIC_URL is not set, so we cannot tell
)

// numbersReport is what `handset numbers --json` prints.
type numbersReport struct {
	Account accountView `json:"account"`
	// HandsetVoiceURL is the carrier's voice webhook under HANDSET_PUBLIC_URL; empty
	// without a public URL.
	HandsetVoiceURL string `json:"handset_voice_url"`
	// PhoneNumber is HANDSET_PHONE_NUMBER, and PhoneNumberFound whether the account has it.
	PhoneNumber      string         `json:"phone_number"`
	PhoneNumberFound bool           `json:"phone_number_found"`
	Numbers          []numberStatus `json:"numbers"`
	Hints            []string       `json:"hints,omitempty"`

	carrier registry.Carrier // whose account it is, for its words
}

// accountView is the carrier account as the reports show it, in the field names they
// have always had (Twilio's, the first carrier's).
type accountView struct {
	SID          string `json:"sid"`
	FriendlyName string `json:"friendly_name"`
	Status       string `json:"status"`
	Type         string `json:"type"` // Trial or Full
}

func accountViewOf(a carrier.Account) accountView {
	v := accountView{SID: a.ID, FriendlyName: a.Name, Status: a.Status, Type: "Full"}
	if a.Trial {
		v.Type = "Trial"
	}
	return v
}

// numberView is one of the account's numbers as the reports show it.
type numberView struct {
	SID                 string `json:"sid"`
	PhoneNumber         string `json:"phone_number"`
	FriendlyName        string `json:"friendly_name"`
	VoiceURL            string `json:"voice_url"`
	VoiceMethod         string `json:"voice_method"`
	VoiceApplicationSID string `json:"voice_application_sid"` // what overrides VoiceURL
	StatusCallback      string `json:"status_callback"`
}

func numberViewOf(n carrier.Number) numberView {
	return numberView{SID: n.Ref, PhoneNumber: n.PhoneNumber, FriendlyName: n.FriendlyName, VoiceURL: n.VoiceURL,
		VoiceMethod: n.VoiceMethod, VoiceApplicationSID: n.Override, StatusCallback: n.StatusCallback}
}

// numberStatus is one number and where its calls go.
type numberStatus struct {
	numberView
	// IsPhoneNumber marks HANDSET_PHONE_NUMBER.
	IsPhoneNumber bool   `json:"is_handset_phone_number"`
	Voice         string `json:"voice"`      // one of the voice… states above
	VoiceNote     string `json:"voice_note"` // the same, in words
}

func runNumbers(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("numbers", env)
	asJSON := fs.Bool("json", false, "print a JSON report instead of text")
	carrierName := carrierFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: handset numbers [--carrier NAME] [--json]")
		fmt.Fprintln(fs.Output(), "\nLists the carrier account's phone numbers and where each one's calls go.")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{msg: "numbers takes no arguments, got " + strings.Join(fs.Args(), " "),
			hint: "`handset attach-number NUMBER` points one number at Handset"}
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
	c, err := entry.Numbers.Open(cfg)
	if err != nil {
		return err
	}
	rep, err := listNumbers(ctx, entry, c, cfg)
	if err != nil {
		return entry.Numbers.Explain(cfg, err)
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.print(env.Stdout)
	return nil
}

// listNumbers reads the account and its numbers from the carrier c (entry's control) and
// says where each number's calls go.
func listNumbers(ctx context.Context, entry registry.Carrier, c carrier.Carrier, cfg *config.Config) (numbersReport, error) {
	account, err := c.Account(ctx)
	if err != nil {
		return numbersReport{}, err
	}
	numbers, err := c.Numbers(ctx)
	if err != nil {
		return numbersReport{}, err
	}
	rep := numbersReport{Account: accountViewOf(account), PhoneNumber: cfg.PhoneNumber, Numbers: []numberStatus{}, carrier: entry}
	rep.HandsetVoiceURL = entry.Numbers.Webhooks.VoiceURL(cfg.PublicURL)
	for _, n := range numbers {
		st := numberStatus{numberView: numberViewOf(n), IsPhoneNumber: n.PhoneNumber == cfg.PhoneNumber && cfg.PhoneNumber != ""}
		st.Voice, st.VoiceNote = voiceTarget(entry.Numbers, n, rep.HandsetVoiceURL)
		rep.PhoneNumberFound = rep.PhoneNumberFound || st.IsPhoneNumber
		rep.Numbers = append(rep.Numbers, st)
	}
	rep.Hints = numbersHints(rep)
	return rep, nil
}

// voiceTarget says where calls to n go, given Handset's voice URL (empty when unknown).
func voiceTarget(nm registry.Numbers, n carrier.Number, handsetURL string) (state, note string) {
	switch {
	case n.Override != "":
		return voiceOverridden, fmt.Sprintf("uses a %s %s, which overrides the voice URL", nm.Override, n.Override)
	case n.VoiceURL == "":
		return voiceNone, "has no voice URL, so its calls do not reach Handset"
	case handsetURL == "":
		if strings.HasSuffix(strings.TrimRight(urlPath(n.VoiceURL), "/"), nm.Webhooks.VoicePath) {
			return voiceUnknownOwner, "looks like a Handset voice URL; set HANDSET_PUBLIC_URL to check it is this Handset"
		}
		return voiceUnknownOwner, "set HANDSET_PUBLIC_URL to check whether it points at Handset"
	case !nm.Webhooks.Same(n.VoiceURL, handsetURL):
		return voiceElsewhere, "points elsewhere: " + n.VoiceURL
	case strings.EqualFold(n.VoiceMethod, "GET"):
		return voiceHandsetGET, "points at Handset, but with GET; Handset answers POST only"
	}
	return voiceAtHandset, "points at Handset"
}

func urlPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Path
}

// numbersHints are the next steps the report suggests.
func numbersHints(rep numbersReport) []string {
	var hints []string
	c := rep.carrier
	if rep.Account.Status != "" && rep.Account.Status != "active" {
		hints = append(hints, fmt.Sprintf("the account is %s: it takes no calls until it is active again (check it in %s)", rep.Account.Status, c.Numbers.Console))
	}
	if len(rep.Numbers) == 0 {
		return append(hints, "this account has no phone numbers: buy one with voice capability in "+c.Numbers.BuyNumbers)
	}
	if rep.HandsetVoiceURL == "" {
		hints = append(hints, "HANDSET_PUBLIC_URL is not set, so Handset's voice URL is unknown: set it to the public https address "+c.Title+" reaches Handset at")
	}
	switch {
	case rep.PhoneNumber == "":
		hints = append(hints, "set HANDSET_PHONE_NUMBER to the number Handset answers and calls from")
	case !rep.PhoneNumberFound:
		hints = append(hints, fmt.Sprintf("HANDSET_PHONE_NUMBER %s is not a number of this account: set it to one of the numbers above", rep.PhoneNumber))
	default:
		for _, n := range rep.Numbers {
			if n.IsPhoneNumber && n.Voice != voiceAtHandset && rep.HandsetVoiceURL != "" {
				hints = append(hints, fmt.Sprintf("run `handset attach-number %s` to send its calls to Handset", n.PhoneNumber))
			}
		}
	}
	return hints
}

func (rep numbersReport) print(w io.Writer) {
	a := rep.Account
	plural := "s"
	if len(rep.Numbers) == 1 {
		plural = ""
	}
	fmt.Fprintf(w, "%s account %q (%s, %s, %s): %d number%s\n", rep.carrier.Title, a.FriendlyName, a.SID, a.Type, a.Status, len(rep.Numbers), plural)
	if rep.HandsetVoiceURL != "" {
		fmt.Fprintf(w, "Handset's voice URL: %s\n", rep.HandsetVoiceURL)
	}
	for _, n := range rep.Numbers {
		mark, tag := " ", ""
		if n.IsPhoneNumber {
			mark, tag = "*", "  [HANDSET_PHONE_NUMBER]"
		}
		fmt.Fprintf(w, "\n%s %s  %s  %s%s\n", mark, n.PhoneNumber, n.FriendlyName, n.SID, tag)
		fmt.Fprintf(w, "    voice URL: %s\n", methodURL(n.VoiceMethod, n.VoiceURL))
		if n.VoiceApplicationSID != "" {
			fmt.Fprintf(w, "    %s: %s\n", rep.carrier.Numbers.Override, n.VoiceApplicationSID)
		}
		if n.StatusCallback != "" {
			fmt.Fprintf(w, "    status callback: %s\n", n.StatusCallback)
		}
		fmt.Fprintf(w, "    %s\n", n.VoiceNote)
	}
	if len(rep.Hints) > 0 {
		fmt.Fprintln(w)
	}
	for _, h := range rep.Hints {
		fmt.Fprintln(w, "hint: "+h)
	}
}
