package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ValidateOptions says what the command about to run needs on top of well-formed values.
type ValidateOptions struct {
	// RequireAgent makes an empty HANDSET_AGENT an error (`handset serve`).
	RequireAgent bool
	// RequireSpeech makes an empty HANDSET_STT or HANDSET_TTS an error (`handset serve`).
	RequireSpeech bool
	// RequireKeys checks that the selected agent runtime, STT and TTS providers, and the
	// carriers' accounts have the keys they need (a carrier's settings that go together,
	// HANDSET_CARRIER naming a configured carrier). A key for a speech or OpenAI provider is only required
	// while its URL points at the vendor's own API; self-hosted servers and proxies may not
	// need one.
	RequireKeys bool
	// RequireAgentKey checks only the agent runtime's key, as RequireKeys does
	// (`handset bridge`, which runs no speech provider or carrier).
	RequireAgentKey bool
}

// Validate reports every problem with c at once, as a *ValidationError, or nil. It covers values
// that did not parse when loaded, values of the wrong form, contradictory settings, and what
// opts asks for.
func (c *Config) Validate(opts ValidateOptions) error {
	table := settingTable()
	var errs []FieldError
	for _, s := range table {
		if p := c.info.problemFor(s.Env); p != nil {
			errs = append(errs, *p)
			continue
		}
		if reason := s.validate(c); reason != "" {
			fe := c.fieldError(s, reason, true)
			if s.Kind == KindEnum {
				fe.Suggest = closestValue(s.text(c), s.Allowed)
			}
			errs = append(errs, fe)
		}
	}
	errs = append(errs, c.crossCheck(table, opts)...)
	if len(errs) == 0 {
		return nil
	}
	return &ValidationError{Errors: errs}
}

// fieldError builds the error for s; withValue quotes the current value unless s is secret.
func (c *Config) fieldError(s Setting, reason string, withValue bool) FieldError {
	fe := FieldError{Env: s.Env, YAML: s.YAML, Reason: reason, Origin: c.info.origin(s.Env)}
	if withValue && !s.Secret() {
		fe.Value = s.written(c)
	}
	return fe
}

// validate checks the form of one value and returns the reason it is bad, or "".
func (s Setting) validate(c *Config) string {
	switch p := s.field(c).(type) {
	case *string:
		v := *p
		if v == "" {
			if s.Required {
				return "must not be empty"
			}
			return ""
		}
		switch s.Kind {
		case KindEnum:
			if !slices.Contains(s.Allowed, v) {
				reason := "is not one of " + strings.Join(s.Allowed, ", ")
				if guess := closestValue(v, s.Allowed); guess != "" {
					reason += " (did you mean " + guess + "?)"
				}
				return reason
			}
		case KindURL:
			if reason := checkURL(v, s.wsOK); reason != "" {
				return reason
			}
		case KindListen:
			if reason := checkListen(v); reason != "" {
				return reason
			}
		}
		if s.check != nil {
			return s.check(v)
		}
	case *Secret:
		if !p.IsSet() {
			if s.Required {
				return "must not be empty"
			}
			return ""
		}
		if s.check != nil {
			return s.check(p.Reveal())
		}
	case *time.Duration:
		return checkAmount(*p < 0, *p == 0, s.positive)
	case *int:
		if reason := checkAmount(*p < 0, *p == 0, s.positive); reason != "" || s.check == nil {
			return reason
		}
		return s.check(strconv.Itoa(*p))
	}
	return ""
}

func checkAmount(negative, zero, positive bool) string {
	switch {
	case negative:
		return "must not be negative"
	case zero && positive:
		return "must be more than 0"
	}
	return ""
}

// checkURL checks an absolute http(s) URL, or also ws(s) when ws is set.
func checkURL(v string, ws bool) string {
	u, err := url.Parse(v)
	schemeOK := u != nil && (u.Scheme == "http" || u.Scheme == "https" || ws && isWSScheme(u.Scheme))
	if err != nil || !schemeOK || u.Host == "" || u.Opaque != "" {
		if ws {
			return "is not an absolute http://, https://, ws:// or wss:// URL, like http://127.0.0.1:18789"
		}
		return "is not an absolute http:// or https:// URL, like https://example.com"
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "must not have a query or a fragment: Handset appends its own paths"
	}
	return ""
}

func isWSScheme(scheme string) bool { return scheme == "ws" || scheme == "wss" }

func checkListen(v string) string {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return "is not a host:port address, like 127.0.0.1:8080 or :8080"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "has no valid port: use a number from 0 to 65535"
	}
	return ""
}

func checkE164(v string) string {
	digits := strings.TrimPrefix(v, "+")
	ok := digits != v && len(digits) >= 8 && len(digits) <= 15 && digits[0] != '0'
	for i := 0; ok && i < len(digits); i++ {
		ok = '0' <= digits[i] && digits[i] <= '9'
	}
	if !ok {
		return "is not an E.164 number: write + then 8 to 15 digits with no spaces, like +14155550100"
	}
	return ""
}

// MinTokenLength is the least length of a bearer token Handset accepts: a short one can be
// guessed. Generated tokens are 64 hexadecimal digits.
const MinTokenLength = 32

func checkToken(v string) string {
	if n := utf8.RuneCountInString(v); n < MinTokenLength {
		return fmt.Sprintf("is too short to be safe (%d of at least %d characters): `openssl rand -hex 32` makes one", n, MinTokenLength)
	}
	return ""
}

// checkTokenList checks each of several comma-separated tokens as checkToken does.
func checkTokenList(v string) string {
	parts := strings.Split(v, ",")
	for i, t := range parts {
		if reason := checkToken(strings.TrimSpace(t)); reason != "" {
			if len(parts) == 1 {
				return reason
			}
			return fmt.Sprintf("token %d of %d %s", i+1, len(parts), reason)
		}
	}
	return ""
}

func checkDatabaseURL(v string) string {
	lower := strings.ToLower(v)
	if !strings.HasPrefix(lower, "postgres://") && !strings.HasPrefix(lower, "postgresql://") {
		return "must be a postgres:// or postgresql:// URL (leave it empty for SQLite)"
	}
	return ""
}

// Vendor API hosts: a key is required only while a provider points at one of these.
const (
	openAIHost     = "api.openai.com"
	deepgramHost   = "api.deepgram.com"
	elevenLabsHost = "api.elevenlabs.io"
)

func hostIs(rawURL, host string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && strings.EqualFold(u.Hostname(), host)
}

// crossCheck covers the rules that involve more than one setting.
func (c *Config) crossCheck(table []Setting, opts ValidateOptions) []FieldError {
	var errs []FieldError
	add := func(env, reason string) {
		s, _ := lookupSetting(table, env)
		errs = append(errs, c.fieldError(s, reason, false))
	}
	if opts.RequireAgent && c.Agent.Runtime == "" {
		s, _ := lookupSetting(table, "HANDSET_AGENT")
		add("HANDSET_AGENT", "is required: set it to the agent runtime that answers calls, one of "+strings.Join(s.Allowed, ", "))
	}
	if opts.RequireSpeech && c.STT.Provider == "" {
		s, _ := lookupSetting(table, "HANDSET_STT")
		add("HANDSET_STT", "is required: set it to the speech-to-text provider, one of "+strings.Join(s.Allowed, ", "))
	}
	if opts.RequireSpeech && c.TTS.Provider == "" {
		s, _ := lookupSetting(table, "HANDSET_TTS")
		add("HANDSET_TTS", "is required: set it to the text-to-speech provider, one of "+strings.Join(s.Allowed, ", "))
	}
	if f := c.STT.Fallback; f != "" && f == c.STT.Provider {
		add("HANDSET_STT_FALLBACK", "must name a provider other than HANDSET_STT (both are "+f+"): a second provider, or leave it empty")
	}
	if f := c.TTS.Fallback; f != "" && f == c.TTS.Provider {
		add("HANDSET_TTS_FALLBACK", "must name a provider other than HANDSET_TTS (both are "+f+"): a second provider, or leave it empty")
	}
	if u, err := url.Parse(c.Agent.URL); err == nil && isWSScheme(u.Scheme) && c.Agent.Runtime != "" && c.Agent.Runtime != AgentOpenClaw {
		add("HANDSET_AGENT_URL", "is a ws:// or wss:// URL, which only HANDSET_AGENT=openclaw takes (its gateway's WebSocket): HANDSET_AGENT="+c.Agent.Runtime+" needs an http:// or https:// URL")
	}
	if c.Agent.Runtime == AgentWebhook && c.Agent.URL == "" {
		add("HANDSET_AGENT_URL", "is required with HANDSET_AGENT=webhook: set it to the URL your webhook listens on")
	}
	if c.Session.Key != "" && c.Session.KeyFrom != "" {
		add("HANDSET_SESSION_KEY_FROM", "cannot be combined with HANDSET_SESSION_KEY (session.key): set only one of them")
	}
	switch t := c.Agent.Transport; {
	case t != "runs" && t != "chat" && t != "ws" && t != "http": // empty, or already reported as not a choice
	case c.Agent.Runtime == "": // nothing to check it against yet (serve requires a runtime)
	case (t == "runs" || t == "chat") && c.Agent.Runtime == AgentHermes:
	case (t == "ws" || t == "http") && c.Agent.Runtime == AgentOpenClaw:
	default:
		add("HANDSET_AGENT_TRANSPORT", fmt.Sprintf("%q does not apply to HANDSET_AGENT=%s: hermes takes runs or chat, openclaw takes ws or http", t, c.Agent.Runtime))
	}
	if c.ToolsToken.IsSet() && c.ToolsToken.Reveal() == c.APIToken.Reveal() {
		add("HANDSET_TOOLS_TOKEN", "is the same as HANDSET_API_TOKEN: the tools token must be its own, or it grants everything")
	}
	if d := c.DashboardToken; d.IsSet() && (d.Reveal() == c.APIToken.Reveal() || d.Reveal() == c.ToolsToken.Reveal()) {
		add("HANDSET_DASHBOARD_TOKEN", "is the same as HANDSET_API_TOKEN or HANDSET_TOOLS_TOKEN: the dashboard token must be its own, so it can be handed out (and taken back) alone")
	}
	if c.Bridge.On && !c.Bridge.Token.IsSet() {
		add("HANDSET_BRIDGE_TOKEN", "is required with HANDSET_BRIDGE=true: the bridge never answers without a token (openssl rand -hex 32 makes one)")
	}
	for _, b := range c.BridgeTokens() {
		if b == c.APIToken.Reveal() || b == c.ToolsToken.Reveal() || b == c.DashboardToken.Reveal() {
			add("HANDSET_BRIDGE_TOKEN", "is the same as another of Handset's tokens: the bridge's token must be its own, so it grants the bridge and nothing else")
			break
		}
	}
	// written so that NaN, which every comparison rejects, fails too
	if p, err := strconv.ParseFloat(c.VAD.Threshold, 64); err != nil || !(p > 0 && p < 1) {
		add("HANDSET_VAD_THRESHOLD", fmt.Sprintf("%q is not a probability between 0 and 1 (exclusive), e.g. 0.5", c.VAD.Threshold))
	}
	for _, p := range c.browserChecks() {
		add(p.env, p.reason)
	}
	if !opts.RequireKeys && !opts.RequireAgentKey {
		return errs
	}

	if !c.Agent.Key.IsSet() {
		switch {
		case c.Agent.Runtime == AgentHermes:
			add("HANDSET_AGENT_KEY", "is required with HANDSET_AGENT=hermes: set it, or "+HermesKeyVar+", to the API_SERVER_KEY of your Hermes gateway (in ~/.hermes/.env)")
		case c.Agent.Runtime == AgentOpenAI && hostIs(c.AgentURL(), openAIHost):
			add("HANDSET_AGENT_KEY", "is required with HANDSET_AGENT=openai at "+c.AgentURL()+": set OPENAI_API_KEY (openai.key), or HANDSET_AGENT_KEY for a separate key")
		}
	}

	if !opts.RequireKeys {
		return errs
	}

	// A fallback needs its keys as much as the provider it stands in for.
	var openAIUsers []string
	stt, tts := speechUsers("HANDSET_STT", c.STT.Provider, c.STT.Fallback), speechUsers("HANDSET_TTS", c.TTS.Provider, c.TTS.Fallback)
	openAIUsers = append(append(openAIUsers, stt[STTOpenAI]...), tts[TTSOpenAI]...)
	if len(openAIUsers) > 0 && !c.OpenAI.Key.IsSet() && hostIs(c.OpenAI.URL, openAIHost) {
		add("OPENAI_API_KEY", "is required with "+strings.Join(openAIUsers, " and ")+": create a key at platform.openai.com")
	}
	if users := stt[STTDeepgram]; len(users) > 0 && !c.STT.Deepgram.Key.IsSet() && hostIs(c.STT.Deepgram.URL, deepgramHost) {
		add("DEEPGRAM_API_KEY", "is required with "+users[0]+": create a key in the Deepgram console, or choose another "+strings.SplitN(users[0], "=", 2)[0])
	}
	if users := tts[TTSElevenLabs]; len(users) > 0 && !c.TTS.ElevenLabs.Key.IsSet() && hostIs(c.TTS.ElevenLabs.URL, elevenLabsHost) {
		add("ELEVENLABS_API_KEY", "is required with "+users[0]+": create a key in the ElevenLabs settings, or choose another "+strings.SplitN(users[0], "=", 2)[0])
	}

	switch sid, token := c.Twilio.AccountSID != "", c.Twilio.AuthToken.IsSet(); {
	case sid && !token:
		add("TWILIO_AUTH_TOKEN", "is required with TWILIO_ACCOUNT_SID: copy it from the Twilio console")
	case token && !sid:
		add("TWILIO_ACCOUNT_SID", "is required with TWILIO_AUTH_TOKEN: copy it (AC…) from the Twilio console")
	}
	c.requiredTogether(add)
	if reason := c.carrierChoice(); reason != "" {
		add("HANDSET_CARRIER", reason)
	}
	return errs
}

// speechUsers maps each speech provider in use to the settings that choose it, such as
// "HANDSET_STT=deepgram" or "HANDSET_STT_FALLBACK=deepgram".
func speechUsers(env, provider, fallback string) map[string][]string {
	users := map[string][]string{}
	if provider != "" {
		users[provider] = append(users[provider], env+"="+provider)
	}
	if fallback != "" {
		users[fallback] = append(users[fallback], env+"_FALLBACK="+fallback)
	}
	return users
}
