package config

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/registry"
)

// Kind is the type of a setting's value; it decides how the value is parsed and checked.
type Kind int

// The kinds of setting.
const (
	KindString   Kind = iota // free text
	KindSecret               // free text that is never displayed
	KindDuration             // Go duration syntax: 1500ms, 4s, 60m; never negative
	KindBool                 // true, false, 1, 0, yes, no
	KindInt                  // a whole number, never negative
	KindEnum                 // one of Setting.Allowed (or empty when not Required)
	KindURL                  // an absolute http:// or https:// URL, or empty when not Required
	KindListen               // a host:port listen address
)

// String names the kind as the docs show it.
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindSecret:
		return "secret"
	case KindDuration:
		return "duration"
	case KindBool:
		return "bool"
	case KindInt:
		return "int"
	case KindEnum:
		return "enum"
	case KindURL:
		return "url"
	case KindListen:
		return "listen address"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Setting describes one setting: its names, type, default and meaning. Settings returns the
// whole table; loading, validation, doctor's display and the docs all come from it.
type Setting struct {
	Env  string // environment variable, e.g. HANDSET_AGENT_URL
	YAML string // dotted YAML path, e.g. agent.url
	Kind Kind
	// Default is the value applied when no layer sets one, in the syntax a user would write.
	Default string
	// DefaultText describes the default for people when Default alone does not tell the story
	// (per-runtime defaults, values generated at run time). Empty means "show Default".
	DefaultText string
	Allowed     []string // the accepted values of a KindEnum
	Required    bool     // an empty value is an error
	Help        string   // one or two sentences for docs and doctor

	positive bool                      // durations and ints: 0 is an error too
	wsOK     bool                      // URLs: ws:// and wss:// are accepted too (crossCheck says for which runtime)
	check    func(value string) string // extra check of a non-empty value; returns the reason it is bad
	field    func(*Config) any         // pointer to the Config field: *string, *Secret, *time.Duration, *bool or *int
}

// Settings returns every setting in documentation order. The slice is a fresh copy.
func Settings() []Setting {
	return settingTable()
}

// Secret reports whether the setting holds a credential that must never be displayed.
func (s Setting) Secret() bool { return s.Kind == KindSecret }

// Display renders the setting's value in c for people: secrets as "set" or "missing", other
// values as the user (or the table's default) wrote them, "" when empty.
func (s Setting) Display(c *Config) string {
	if p, ok := s.field(c).(*Secret); ok {
		return p.Status()
	}
	return s.written(c)
}

// written is the value in c spelled as it was written ("60s" rather than "1m"), when that
// spelling still means what the field holds; otherwise the canonical text. Never call it on
// secrets for display.
func (s Setting) written(c *Config) string {
	v := s.text(c)
	var spellings []string
	if raw, ok := c.info.rawValue(s.Env); ok {
		spellings = append(spellings, raw)
	}
	for _, w := range append(spellings, s.Default) {
		if w == v {
			return v
		}
		if probe := Default(); s.set(probe, w) == "" && s.text(probe) == v {
			return w
		}
	}
	return v
}

// text is the value in c as a user would write it. Never call it on secrets for display.
func (s Setting) text(c *Config) string {
	switch p := s.field(c).(type) {
	case *string:
		return *p
	case *Secret:
		return p.Reveal()
	case *time.Duration:
		return formatDuration(*p)
	case *bool:
		return strconv.FormatBool(*p)
	case *int:
		return strconv.Itoa(*p)
	}
	panic("config: " + s.Env + " has a field of an unknown type")
}

// set parses raw into the setting's field of c. On failure it returns the reason, phrased to
// follow the quoted value ("is not a duration …"), and leaves the field unchanged.
func (s Setting) set(c *Config, raw string) string {
	raw = strings.TrimSpace(raw)
	switch p := s.field(c).(type) {
	case *string:
		switch s.Kind {
		case KindEnum:
			if i := slices.IndexFunc(s.Allowed, func(a string) bool { return strings.EqualFold(raw, a) }); i >= 0 {
				raw = s.Allowed[i] // the table's own spelling: "TEXT" is text, "a" is A
			}
		case KindURL:
			raw = strings.TrimRight(raw, "/")
		}
		*p = raw
	case *Secret:
		*p = NewSecret(raw)
	case *time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return "is not a duration (write it with a unit, like 1500ms, 4s or 60m)"
		}
		if d < 0 {
			return "must not be negative"
		}
		*p = d
	case *bool:
		b, ok := parseBool(raw)
		if !ok {
			return "is not a boolean (use true, false, 1, 0, yes or no)"
		}
		*p = b
	case *int:
		n, err := strconv.Atoi(raw)
		if err != nil {
			return "is not a whole number"
		}
		if n < 0 {
			return "must not be negative"
		}
		*p = n
	default:
		panic("config: " + s.Env + " has a field of an unknown type")
	}
	return ""
}

func parseBool(s string) (value, ok bool) {
	switch strings.ToLower(s) {
	case "true", "1", "yes":
		return true, true
	case "false", "0", "no":
		return false, true
	}
	return false, false
}

// formatDuration writes d the way people write durations: 1500ms, 4s, 60m, 1h30m.
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < 0:
		return d.String()
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return d.String()
}

func lookupSetting(table []Setting, env string) (Setting, bool) {
	for _, s := range table {
		if s.Env == env {
			return s, true
		}
	}
	return Setting{}, false
}

// The built-in spoken defaults, in Handset's own words.
const (
	defaultSystemPrompt = "You are speaking with someone on a phone call, and everything you write " +
		"is read aloud. Answer briefly, in plain conversational sentences. Do not use markdown, " +
		"lists, headings, links, code or emoji. If you need something from the caller, ask one " +
		"short question at a time."
	defaultErrorMessage    = "Sorry, I ran into a problem there. Could you say that again?"
	defaultSTTErrorMessage = "Sorry, I'm having trouble hearing you. One moment."
	// defaultLongTurnMessage fills the wait for a slow reply or a tool run.
	defaultLongTurnMessage = "One moment."
	// DefaultDrainMessage is HANDSET_DRAIN_MESSAGE when unset.
	DefaultDrainMessage = "Sorry, I have to hang up now. Please call again."
)

// settingTable builds the table afresh on every call, so no caller can change another's copy.
// The settings carriers declare in the registry follow HANDSET_PHONE_NUMBER, the last of the
// carriers' built-in rows.
func settingTable() []Setting {
	table := builtinSettings()
	at := slices.IndexFunc(table, func(s Setting) bool { return s.Env == "HANDSET_PHONE_NUMBER" }) + 1
	return slices.Insert(table, at, declaredSettings(table)...)
}

// builtinSettings are the settings this package names itself.
func builtinSettings() []Setting {
	return []Setting{
		// Server.
		{Env: "HANDSET_LISTEN", YAML: "listen", Kind: KindListen, Default: "127.0.0.1:8080", Required: true,
			Help:  "Address the HTTP server listens on: carrier webhooks and media streams, browser calls, API and dashboard. Use `:8080` or `0.0.0.0:8080` to accept connections from other machines.",
			field: func(c *Config) any { return &c.Listen }},
		{Env: "HANDSET_PUBLIC_URL", YAML: "public_url", Kind: KindURL, DefaultText: "derived from each request",
			Help:  "Public base URL carriers reach, such as `https://voice.example.com`. Used in TwiML and webhooks, and the URL webhook signatures are checked against: set it behind a proxy or tunnel, where the request's own address differs. Its host is also a name the browser call page answers to.",
			field: func(c *Config) any { return &c.PublicURL }},
		{Env: "HANDSET_TRUSTED_PROXIES", YAML: "trusted_proxies", Kind: KindString, Default: DefaultTrustedProxies,
			Help:  "Comma-separated IP addresses and CIDR ranges of the reverse proxies and load balancers in front of Handset, or `none`. Only a peer in this list is believed when it sends `X-Forwarded-Host` and `X-Forwarded-Proto` (the URL a carrier's signature is checked against, when HANDSET_PUBLIC_URL is empty), only its connections are exempt from the cap on open connections per client address, and only its `X-Forwarded-For` names the client that per-client limits (browser calls, dashboard sign-in tries) count against.",
			check: checkTrustedProxies,
			field: func(c *Config) any { return &c.TrustedProxies }},
		{Env: "HANDSET_DATA_DIR", YAML: "data_dir", Kind: KindString, Default: "./handset-data", Required: true,
			Help:  "Folder for the SQLite database, call journals and the secrets Handset generates.",
			field: func(c *Config) any { return &c.DataDir }},
		{Env: "HANDSET_DATABASE_URL", YAML: "database_url", Kind: KindSecret, DefaultText: "empty (SQLite in the data folder)",
			Help:  "A `postgres://` or `postgresql://` URL switches the store to PostgreSQL, so several Handset nodes can share it.",
			check: checkDatabaseURL,
			field: func(c *Config) any { return &c.DatabaseURL }},

		// Agent runtime.
		{Env: "HANDSET_AGENT", YAML: "agent.runtime", Kind: KindEnum,
			Allowed:     registry.Names(registry.KindAgent),
			DefaultText: "empty: `handset serve` requires it, `handset demo` uses `echo`",
			Help:        "The agent runtime that answers the caller.",
			field:       func(c *Config) any { return &c.Agent.Runtime }},
		{Env: "HANDSET_AGENT_URL", YAML: "agent.url", Kind: KindURL, wsOK: true,
			DefaultText: "per runtime: hermes `" + DefaultHermesURL + "`, openclaw `" + DefaultOpenClawURL + "`, openai the value of `HANDSET_OPENAI_URL`; webhook has none and requires it",
			Help:        "Base URL of the agent runtime. For OpenClaw, the gateway's address as `http://`/`https://` or `ws://`/`wss://`: both name the same port, and each transport uses its own scheme.",
			field:       func(c *Config) any { return &c.Agent.URL }},
		{Env: "HANDSET_AGENT_KEY", YAML: "agent.key", Kind: KindSecret,
			DefaultText: "falls back to `" + HermesKeyVar + "` (hermes), `" + OpenClawKeyVar + "` (openclaw) or `OPENAI_API_KEY` (openai, only while the agent URL is the `HANDSET_OPENAI_URL` root)",
			Help:        "Bearer key sent to the agent runtime.",
			field:       func(c *Config) any { return &c.Agent.Key }},
		{Env: "HANDSET_AGENT_MODEL", YAML: "agent.model", Kind: KindString,
			DefaultText: "per runtime: hermes `" + DefaultHermesModel + "`, openclaw the gateway's only agent (a gateway with several refuses to guess: name one), openai `" + DefaultOpenAIModel + "`",
			Help:        "Model or agent id sent with each turn. For OpenClaw it names the agent: `openclaw/<agent id>`, required when the gateway has more than one agent.",
			field:       func(c *Config) any { return &c.Agent.Model }},
		{Env: "HANDSET_AGENT_TIMEOUT", YAML: "agent.timeout", Kind: KindDuration, Default: "60s", positive: true,
			Help:  "The longest the agent runtime may stay silent, before its first token or between two tokens, before the turn fails and the error message is spoken.",
			field: func(c *Config) any { return &c.Agent.Timeout }},
		{Env: "HANDSET_AGENT_TURN_TIMEOUT", YAML: "agent.turn_timeout", Kind: KindDuration, Default: "90s", positive: true,
			Help:  "The longest one turn may take from the request to the reply's end, however busy the runtime keeps it (tool events and keepalives included): past it the run is aborted and the error message is spoken.",
			field: func(c *Config) any { return &c.Agent.TurnTimeout }},
		{Env: "HANDSET_AGENT_HISTORY_LIMIT", YAML: "agent.history_limit", Kind: KindInt, Default: "200",
			Help: "The latest messages of the call (caller and agent together) that Handset keeps and sends with each turn to a runtime that takes the history from it; older ones are let go, so a long call's requests and memory stop growing. 0 keeps the whole call; otherwise at least 4.",
			check: func(v string) string {
				if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 4 {
					return "must be 0 (the whole call) or at least 4"
				}
				return ""
			},
			field: func(c *Config) any { return &c.Agent.HistoryLimit }},
		{Env: "HANDSET_SYSTEM_PROMPT", YAML: "agent.system_prompt", Kind: KindString, Default: defaultSystemPrompt,
			Help:  "Voice instructions sent with each turn.",
			field: func(c *Config) any { return &c.Agent.SystemPrompt }},
		{Env: "HANDSET_SYSTEM_PROMPT_AS_USER", YAML: "agent.system_prompt_as_user", Kind: KindBool, Default: "false",
			Help:  "For runtimes that ignore system messages: put the voice instructions at the start of the caller's latest message instead.",
			field: func(c *Config) any { return &c.Agent.SystemPromptAsUser }},
		{Env: "HANDSET_AGENT_TRANSPORT", YAML: "agent.transport", Kind: KindEnum, Allowed: []string{"runs", "chat", "ws", "http"},
			DefaultText: "empty: hermes uses runs, openclaw uses ws",
			Help:        "How Handset talks to the runtime: Hermes runs (default) or chat completions; OpenClaw's gateway WebSocket (ws, default) or its OpenAI-compatible HTTP endpoint (http).",
			field:       func(c *Config) any { return &c.Agent.Transport }},
		{Env: "HANDSET_AGENT_CA_FILE", YAML: "agent.ca_file", Kind: KindString,
			DefaultText: "empty: the system's certificate authorities only",
			Help:        "A PEM file of certificate authorities trusted, besides the system's, for the agent runtime's certificate over `https://` and `wss://` (every runtime, the OpenClaw WebSocket included): for a runtime behind a private CA. It must hold one or more certificates and nothing else.",
			check:       checkCAFile,
			field:       func(c *Config) any { return &c.Agent.CAFile }},
		{Env: "HANDSET_AGENT_TLS_INSECURE", YAML: "agent.tls_insecure", Kind: KindBool, Default: "false",
			Help:  "Development only: `true` skips the check of the agent runtime's certificate, so anyone on the path can read and answer every turn. Handset logs a warning at start and `handset doctor` shows it. For a private CA use `HANDSET_AGENT_CA_FILE` instead.",
			field: func(c *Config) any { return &c.Agent.TLSInsecure }},

		// Sessions.
		{Env: "HANDSET_SESSION_KEY", YAML: "session.key", Kind: KindString,
			Help:  "A fixed memory key: every call continues one conversation with the agent runtime. Empty: a fresh session per call, unless `HANDSET_SESSION_KEY_FROM` is set.",
			field: func(c *Config) any { return &c.Session.Key }},
		{Env: "HANDSET_SESSION_KEY_FROM", YAML: "session.key_from", Kind: KindEnum, Allowed: []string{SessionKeyFromCallerHash},
			Help:  "`caller_hash` derives the memory key from the caller's hashed number, so each caller continues their own conversation.",
			field: func(c *Config) any { return &c.Session.KeyFrom }},
		{Env: "HANDSET_CALLER_HASH_SECRET", YAML: "session.caller_hash_secret", Kind: KindSecret, DefaultText: "generated once into the data folder",
			Help:  "HMAC secret for caller hashes. Raw caller numbers stay in the store; journals, logs and every request to an agent runtime or speech provider carry the hash instead.",
			field: func(c *Config) any { return &c.Session.CallerHashSecret }},
		{Env: "HANDSET_CALLER_MEMORY_ATTESTATION", YAML: "session.caller_memory_attestation", Kind: KindEnum,
			Allowed: []string{"any", "B", "A"}, Default: "any", Required: true,
			Help: "The least STIR/SHAKEN attestation an inbound caller's number needs to key their memory and callbacks: `any`, `B` (A or B) or `A`. " +
				"A caller below it gets a fresh session, no callback, and the agent is told the number is unverified. Only calls from the US and Canadian phone network carry an attestation; see docs/runtimes.md.",
			field: func(c *Config) any { return &c.Session.CallerMemoryAttestation }},

		// Speech to text.
		{Env: "HANDSET_STT", YAML: "stt.provider", Kind: KindEnum, Allowed: registry.Names(registry.KindSTT),
			DefaultText: "empty: the command decides (`handset demo` uses `sphinx`)",
			Help:        "Speech-to-text provider.",
			field:       func(c *Config) any { return &c.STT.Provider }},
		{Env: "HANDSET_STT_FALLBACK", YAML: "stt.fallback", Kind: KindEnum, Allowed: registry.Names(registry.KindSTT),
			DefaultText: "empty: none",
			Help:        "A second speech-to-text provider, other than `HANDSET_STT` and configured like it (its key and URL settings), that hears the caller while the first is down. A call switches to it as soon as the first fails (the caller's words since the last transcript are replayed to it) and stays on it while it works; the next call starts on `HANDSET_STT` again.",
			field:       func(c *Config) any { return &c.STT.Fallback }},
		{Env: "DEEPGRAM_API_KEY", YAML: "stt.deepgram.key", Kind: KindSecret,
			Help:  "Deepgram API key; required for `HANDSET_STT=deepgram` against Deepgram's own API.",
			field: func(c *Config) any { return &c.STT.Deepgram.Key }},
		{Env: "HANDSET_DEEPGRAM_URL", YAML: "stt.deepgram.url", Kind: KindURL, Default: "https://api.deepgram.com", Required: true,
			Help:  "Deepgram API root, for self-hosted engines, proxies and tests. Handset appends `/v1/listen` and uses `wss://` (or `ws://`) for the stream.",
			field: func(c *Config) any { return &c.STT.Deepgram.URL }},
		{Env: "HANDSET_DEEPGRAM_MODEL", YAML: "stt.deepgram.model", Kind: KindString, Default: "nova-3", Required: true,
			Help:  "Deepgram model.",
			field: func(c *Config) any { return &c.STT.Deepgram.Model }},
		{Env: "HANDSET_DEEPGRAM_LANGUAGE", YAML: "stt.deepgram.language", Kind: KindString, Default: "en-US", Required: true,
			Help:  "Language the caller speaks, as a BCP 47 tag.",
			field: func(c *Config) any { return &c.STT.Deepgram.Language }},

		{Env: "HANDSET_SPHINX_MODEL", YAML: "stt.sphinx.model", Kind: KindString, Default: "/usr/share/pocketsphinx/model/en-us", Required: true,
			Help:  "`HANDSET_STT=sphinx`: folder of the PocketSphinx US English model (Debian package `pocketsphinx-en-us`).",
			field: func(c *Config) any { return &c.STT.Sphinx.Model }},
		{Env: "HANDSET_SPHINX_DECODERS", YAML: "stt.sphinx.decoders", Kind: KindInt, Default: "2", positive: true,
			Help:  "`HANDSET_STT=sphinx`: decoders loaded at start (about 100 MB each), shared by all calls one utterance at a time; more callers speaking at once wait for one.",
			field: func(c *Config) any { return &c.STT.Sphinx.Decoders }},
		{Env: "HANDSET_OPENAI_STT_MODEL", YAML: "stt.openai.model", Kind: KindString, Default: "whisper-1", Required: true,
			Help:  "`HANDSET_STT=openai`: transcription model (self-hosted servers take their own names, such as `Systran/faster-whisper-small`).",
			field: func(c *Config) any { return &c.STT.OpenAIModel }},

		// Text to speech.
		{Env: "HANDSET_TTS", YAML: "tts.provider", Kind: KindEnum, Allowed: registry.Names(registry.KindTTS),
			DefaultText: "empty: the command decides (`handset demo` uses `flite`)",
			Help:        "Text-to-speech provider.",
			field:       func(c *Config) any { return &c.TTS.Provider }},
		{Env: "HANDSET_TTS_FALLBACK", YAML: "tts.fallback", Kind: KindEnum, Allowed: registry.Names(registry.KindTTS),
			DefaultText: "empty: none",
			Help:        "A second text-to-speech provider, other than `HANDSET_TTS` and configured like it, that speaks a sentence the first could not (after one retry, or at once when the first stayed silent past `HANDSET_TTS_TIMEOUT`). After the first fails it speaks first for 30 s.",
			field:       func(c *Config) any { return &c.TTS.Fallback }},
		{Env: "HANDSET_TTS_TIMEOUT", YAML: "tts.timeout", Kind: KindDuration, Default: "3s", positive: true,
			Help:  "The longest a text-to-speech provider may stay silent, before a sentence's first audio or between two pieces of it, before that sentence goes to `HANDSET_TTS_FALLBACK` (without one, the voice is asked once more, then the sentence is given up and the caller hears `HANDSET_ERROR_MESSAGE`). What a caller can be kept waiting in silence for a sentence.",
			field: func(c *Config) any { return &c.TTS.Timeout }},
		{Env: "ELEVENLABS_API_KEY", YAML: "tts.elevenlabs.key", Kind: KindSecret,
			Help:  "ElevenLabs API key; required for `HANDSET_TTS=elevenlabs` against ElevenLabs' own API.",
			field: func(c *Config) any { return &c.TTS.ElevenLabs.Key }},
		{Env: "HANDSET_ELEVENLABS_URL", YAML: "tts.elevenlabs.url", Kind: KindURL, Default: "https://api.elevenlabs.io", Required: true,
			Help:  "ElevenLabs API root, for proxies and tests. Handset appends `/v1/text-to-speech/…`.",
			field: func(c *Config) any { return &c.TTS.ElevenLabs.URL }},
		{Env: "HANDSET_ELEVENLABS_VOICE", YAML: "tts.elevenlabs.voice", Kind: KindString, Default: "21m00Tcm4TlvDq8ikWAM", Required: true,
			Help:  "ElevenLabs voice id. The default is one of ElevenLabs' premade voices.",
			field: func(c *Config) any { return &c.TTS.ElevenLabs.Voice }},
		{Env: "HANDSET_ELEVENLABS_MODEL", YAML: "tts.elevenlabs.model", Kind: KindString, Default: "eleven_flash_v2_5", Required: true,
			Help:  "ElevenLabs model.",
			field: func(c *Config) any { return &c.TTS.ElevenLabs.Model }},

		{Env: "HANDSET_OPENAI_TTS_MODEL", YAML: "tts.openai.model", Kind: KindString, Default: "tts-1", Required: true,
			Help:  "`HANDSET_TTS=openai`: speech model (`kokoro` on Kokoro-FastAPI).",
			field: func(c *Config) any { return &c.TTS.OpenAI.Model }},
		{Env: "HANDSET_OPENAI_TTS_VOICE", YAML: "tts.openai.voice", Kind: KindString, Default: "alloy", Required: true,
			Help:  "`HANDSET_TTS=openai`: voice name (`af_bella` and the like on Kokoro-FastAPI).",
			field: func(c *Config) any { return &c.TTS.OpenAI.Voice }},
		{Env: "HANDSET_FLITE_VOICE", YAML: "tts.flite.voice", Kind: KindEnum, Allowed: []string{"kal", "kal16", "slt", "rms", "awb"}, Default: "kal",
			Help:  "`HANDSET_TTS=flite`: voice for 8 kHz phone calls; `kal` is natively 8 kHz, the others are resampled.",
			field: func(c *Config) any { return &c.TTS.FliteVoice }},
		{Env: "HANDSET_FLITE_WIDEBAND_VOICE", YAML: "tts.flite.wideband_voice", Kind: KindEnum, Allowed: []string{"kal", "kal16", "slt", "rms", "awb"}, Default: "slt",
			Help:  "`HANDSET_TTS=flite`: voice for wideband calls (the browser page).",
			field: func(c *Config) any { return &c.TTS.FliteWidebandVoice }},
		{Env: "HANDSET_ESPEAK_VOICE", YAML: "tts.espeak.voice", Kind: KindString, Default: "en-us", Required: true,
			Help:  "`HANDSET_TTS=espeak`: espeak-ng voice (`espeak-ng --voices` lists them); espeak-ng runs as a separate program.",
			field: func(c *Config) any { return &c.TTS.EspeakVoice }},

		// OpenAI account.
		{Env: "OPENAI_API_KEY", YAML: "openai.key", Kind: KindSecret,
			Help:  "OpenAI API key for the openai STT and TTS providers, and for `HANDSET_AGENT=openai` when `HANDSET_AGENT_KEY` is empty.",
			field: func(c *Config) any { return &c.OpenAI.Key }},
		{Env: "HANDSET_OPENAI_URL", YAML: "openai.url", Kind: KindURL, Default: "https://api.openai.com/v1", Required: true,
			Help:  "OpenAI API root, for compatible servers, proxies and tests. Handset appends `/audio/…` and `/chat/completions`.",
			field: func(c *Config) any { return &c.OpenAI.URL }},

		// Voice activity detection.
		{Env: "HANDSET_VAD", YAML: "vad.engine", Kind: KindEnum, Allowed: registry.Names(registry.KindVAD),
			DefaultText: "empty: the best engine built in",
			Help:        "Voice activity detector.",
			field:       func(c *Config) any { return &c.VAD.Engine }},
		{Env: "HANDSET_VAD_START", YAML: "vad.start", Kind: KindDuration, Default: "100ms",
			Help:  "How much speech the detector needs before it says the caller started talking.",
			field: func(c *Config) any { return &c.VAD.Start }},
		{Env: "HANDSET_VAD_END", YAML: "vad.end", Kind: KindDuration, Default: "500ms", positive: true,
			Help:  "How much silence ends the caller's speech; the turn is committed right after. The largest term in response time: shorter answers faster but cuts off slow talkers.",
			field: func(c *Config) any { return &c.VAD.End }},
		{Env: "HANDSET_VAD_THRESHOLD", YAML: "vad.threshold", Kind: KindString, Default: "0.5",
			Help:  "Silero only: speech probability, strictly between 0 and 1, above which a window counts as speech; 0.8 suits noisy phone lines.",
			field: func(c *Config) any { return &c.VAD.Threshold }},
		{Env: "HANDSET_ENGINES_DIR", YAML: "engines_dir", Kind: KindString, DefaultText: "empty: looked for in order in `./.cache/engines`, beside the binary (`<bin>/engines`, `<bin>/../share/handset/engines`, `<bin>/../.cache/engines`), `$XDG_DATA_HOME/handset/engines` (default `~/.local/share/handset/engines`), `/usr/local/share/handset/engines`, `/usr/share/handset/engines` (see docs/offline.md; `handset install` fills one); when set, the only folder looked in",
			Help:  "Folder holding the embedded engines' files (libonnxruntime.so, silero_vad_v5.onnx, fvad.wasm); scripts/engines.sh fills it.",
			field: func(c *Config) any { return &c.EnginesDir }},

		// Carriers.
		{Env: "HANDSET_CARRIER", YAML: "carrier", Kind: KindEnum, Allowed: carrierNames(),
			DefaultText: "empty: the only configured carrier, or the first configured in the order listed",
			Help:        "The carrier outbound calls, callbacks and the number commands go through when several are configured. Naming a carrier whose account settings are not set is an error. Inbound calls come in through every carrier whatever it says, and a transfer goes through the call's own carrier.",
			field:       func(c *Config) any { return &c.Carrier }},
		{Env: "TWILIO_ACCOUNT_SID", YAML: "twilio.account_sid", Kind: KindString,
			Help:  "Twilio account SID (`AC…`).",
			field: func(c *Config) any { return &c.Twilio.AccountSID }},
		{Env: "TWILIO_AUTH_TOKEN", YAML: "twilio.auth_token", Kind: KindSecret,
			Help:  "Twilio auth token: signs webhooks and authenticates REST calls.",
			field: func(c *Config) any { return &c.Twilio.AuthToken }},
		{Env: "HANDSET_TWILIO_API_URL", YAML: "twilio.api_url", Kind: KindURL, Default: "https://api.twilio.com", Required: true,
			Help:  "Twilio REST API root, for proxies and tests.",
			field: func(c *Config) any { return &c.Twilio.APIURL }},
		{Env: "HANDSET_PHONE_NUMBER", YAML: "phone_number", Kind: KindString,
			Help:  "The number calls come from, in E.164 form (`+14155550100`).",
			check: checkE164,
			field: func(c *Config) any { return &c.PhoneNumber }},

		// What Handset says.
		{Env: "HANDSET_FIRST_MESSAGE", YAML: "messages.first", Kind: KindString,
			Help:  "Greeting spoken when a call starts; the caller can interrupt it. Empty: the caller speaks first.",
			field: func(c *Config) any { return &c.Messages.First }},
		{Env: "HANDSET_LONG_TURN_MESSAGE", YAML: "messages.long_turn", Kind: KindString, Default: defaultLongTurnMessage,
			Help:  "Filler spoken once when a reply is slow, or as soon as the runtime starts a tool. `off` (or `none`) for no filler: an empty variable counts as unset.",
			field: func(c *Config) any { return &c.Messages.LongTurn }},
		{Env: "HANDSET_LONG_TURN_AFTER", YAML: "messages.long_turn_after", Kind: KindDuration, Default: "4s",
			Help:  "How long after a turn is sent to the agent, with nothing yet said to the caller, the filler is spoken.",
			field: func(c *Config) any { return &c.Messages.LongTurnAfter }},
		{Env: "HANDSET_ERROR_MESSAGE", YAML: "messages.error", Kind: KindString, Default: defaultErrorMessage,
			Help:  "Spoken when the agent runtime fails or times out, or when part of a reply could not be spoken; the call goes on.",
			field: func(c *Config) any { return &c.Messages.Error }},
		{Env: "HANDSET_DRAIN_MESSAGE", YAML: "messages.drain", Kind: KindString, Default: DefaultDrainMessage,
			Help:  "Spoken to each call still going when a stopping server's HANDSET_DRAIN_TIMEOUT runs out; the call ends once it has played (or 10 s later at most). Empty (in `handset.yaml`): the call is cut without a word.",
			field: func(c *Config) any { return &c.Messages.Drain }},
		{Env: "HANDSET_STT_ERROR_MESSAGE", YAML: "messages.stt_error", Kind: KindString, Default: defaultSTTErrorMessage,
			Help:  "Spoken once a call when the caller finishes speaking and no speech-to-text provider can hear them (the first has been down for a second, and the fallback too or there is none). Handset keeps trying, and the recognizer that comes back first is given what the caller said. Empty: never.",
			field: func(c *Config) any { return &c.Messages.STTError }},
		{Env: "HANDSET_SILENCE_MESSAGE", YAML: "messages.silence", Kind: KindString, Default: "Are you still there?",
			Help:  "Spoken once when the caller has been silent for HANDSET_SILENCE_REPROMPT; empty: never re-prompt.",
			field: func(c *Config) any { return &c.Messages.Silence }},
		{Env: "HANDSET_SILENCE_REPROMPT", YAML: "turn.silence_reprompt", Kind: KindDuration, Default: "8s",
			Help:  "Caller silence, while nobody speaks, before the re-prompt; 0 disables it.",
			field: func(c *Config) any { return &c.Turn.SilenceReprompt }},
		{Env: "HANDSET_SILENCE_HANGUP", YAML: "turn.silence_hangup", Kind: KindDuration, Default: "30s",
			Help:  "Caller silence after which Handset hangs up; 0 never hangs up for silence.",
			field: func(c *Config) any { return &c.Turn.SilenceHangup }},

		// Turn-taking.
		{Env: "HANDSET_TAIL_GRACE", YAML: "turn.tail_grace", Kind: KindDuration, Default: "1500ms",
			Help:  "After the agent's audio has finished playing, caller speech within this window starts a new turn rather than interrupting.",
			field: func(c *Config) any { return &c.Turn.TailGrace }},
		{Env: "HANDSET_BARGE_IN_CONFIRM", YAML: "turn.barge_in_confirm", Kind: KindDuration, Default: "1500ms",
			Help:  "How long a pending interruption waits for a real transcript before the agent carries on speaking.",
			field: func(c *Config) any { return &c.Turn.BargeInConfirm }},
		{Env: "HANDSET_FORWARD_STT_WHILE_SPEAKING", YAML: "turn.forward_stt_while_speaking", Kind: KindBool, Default: "false",
			Help:  "Keep sending caller audio to speech-to-text while the agent speaks. Interruptions then wait for a confirming transcript.",
			field: func(c *Config) any { return &c.Turn.ForwardSTTWhileSpeaking }},
		{Env: "HANDSET_ECHO", YAML: "turn.echo", Kind: KindEnum, Allowed: []string{EchoAuto, EchoOff}, Default: EchoAuto,
			Help:  "auto: learn each call's echo path (delay and echo return loss) and keep only the echo it explains from the voice activity detector, so a caller quieter than the agent can still interrupt it. off: the detector hears the line as it is (for lines whose carrier cancels echo completely).",
			field: func(c *Config) any { return &c.Turn.Echo }},
		{Env: "HANDSET_ECHO_MAX_DELAY", YAML: "turn.echo_max_delay", Kind: KindDuration, Default: "640ms",
			Help:  "The longest echo delay looked for, from audio being sent to its echo coming back (line delay plus the round trip to the carrier).",
			field: func(c *Config) any { return &c.Turn.EchoMaxDelay }},
		{Env: "HANDSET_BARGE_IN_MIN_WORDS", YAML: "turn.barge_in_min_words", Kind: KindInt, Default: "0",
			Help:  "0: caller speech interrupts the agent as soon as the detector hears it. N: an interruption waits for a transcript of at least N words (backchannels like \"mm-hm\" then do not stop the agent).",
			field: func(c *Config) any { return &c.Turn.BargeInMinWords }},
		{Env: "HANDSET_BARGE_IN_GATE", YAML: "turn.barge_in_gate", Kind: KindDuration, Default: "500ms",
			Help:  "How long after the agent's first audio reaches the caller interruptions stay ignored, so line echo and the caller's own tail do not cut the agent off.",
			field: func(c *Config) any { return &c.Turn.BargeInGate }},
		{Env: "HANDSET_MAX_CALL", YAML: "turn.max_call", Kind: KindDuration, Default: "60m", positive: true,
			Help:  "Longest a call may last before Handset ends it.",
			field: func(c *Config) any { return &c.Turn.MaxCall }},

		// Operations.
		{Env: "HANDSET_API_TOKEN", YAML: "api_token", Kind: KindSecret, DefaultText: "generated once into the data folder (64 hex digits)",
			Help:  "Bearer token for `/api/*` and the dashboard; at least 32 characters (`openssl rand -hex 32` makes one).",
			check: checkToken,
			field: func(c *Config) any { return &c.APIToken }},
		{Env: "HANDSET_TOOLS_TOKEN", YAML: "tools_token", Kind: KindSecret, DefaultText: "empty: no tools token",
			Help:  "A second bearer token, for the agent runtime's tools, limited to what they need: `POST /api/deliver`, transfers and handoffs, one call by its id, and outbound calls to `HANDSET_CALL_ALLOW` (docs/outbound.md). At least 32 characters, and not the API token.",
			check: checkToken,
			field: func(c *Config) any { return &c.ToolsToken }},
		{Env: "HANDSET_LOG_LEVEL", YAML: "log.level", Kind: KindEnum, Default: "info", Required: true,
			Allowed: []string{"debug", "info", "warn", "error"},
			Help:    "Log verbosity. The `--log-level` flag overrides it.",
			field:   func(c *Config) any { return &c.Log.Level }},
		{Env: "HANDSET_LOG_FORMAT", YAML: "log.format", Kind: KindEnum, Default: "text", Required: true,
			Allowed: []string{"text", "json"},
			Help:    "Log format. The `--log-format` flag overrides it.",
			field:   func(c *Config) any { return &c.Log.Format }},
		{Env: "HANDSET_BROWSER", YAML: "browser", Kind: KindBool, Default: "false",
			Help:  "Serve the browser call page at `/` and its media socket at `/browser/ws` (`handset demo` turns it on). Anyone who can open the page can talk to the agent: on an address other machines reach, the page needs `HANDSET_BROWSER_TOKEN` (docs/browser.md).",
			field: func(c *Config) any { return &c.Browser }},
		{Env: "HANDSET_BROWSER_HOSTS", YAML: "browser_hosts", Kind: KindString,
			DefaultText: "empty: the listen address (with `localhost`, `127.0.0.1` and `[::1]` on loopback) and the host of `HANDSET_PUBLIC_URL`",
			Help:        "Comma-separated extra host names the browser call page may be reached by, each optionally with `:port` (`voice.lan, 192.168.1.20:8080`). Requests for any other `Host` are refused (421), so a web page cannot reach the call page through DNS rebinding.",
			check:       checkBrowserHosts,
			field:       func(c *Config) any { return &c.BrowserHosts }},
		{Env: "HANDSET_BROWSER_TOKEN", YAML: "browser_token", Kind: KindSecret,
			DefaultText: "empty: required when the page is on an address other machines reach",
			Help:        "Access secret of the browser call page: open `/?token=<secret>` once and the browser keeps an access cookie; the page and its socket refuse browsers without it. At least 16 letters, digits, `-`, `.`, `_` or `~` (`openssl rand -hex 16` makes one).",
			check:       checkBrowserToken,
			field:       func(c *Config) any { return &c.BrowserToken }},
		{Env: "HANDSET_DASHBOARD", YAML: "dashboard", Kind: KindBool, Default: "true",
			Help:  "Serve the dashboard at `/dashboard`: calls, transcripts, latency, recordings, jobs and sessions (docs/dashboard.md). Nobody sees a page without signing in with `HANDSET_API_TOKEN` or `HANDSET_DASHBOARD_TOKEN`.",
			field: func(c *Config) any { return &c.Dashboard }},
		{Env: "HANDSET_DASHBOARD_TOKEN", YAML: "dashboard_token", Kind: KindSecret, DefaultText: "empty: only `HANDSET_API_TOKEN` signs in",
			Help:  "A second token that signs in to the dashboard, for people who should see calls but not callers' numbers: it shows callers by caller hash, as the API's default view does. At least 32 characters, and not the API token.",
			check: checkToken,
			field: func(c *Config) any { return &c.DashboardToken }},
		{Env: "HANDSET_BRIDGE", YAML: "bridge.enabled", Kind: KindBool, Default: "false",
			Help:  "Serve the agent bridge: `POST /v1/chat/completions` and `GET /v1/models`, OpenAI-compatible, in front of the configured runtime, for voice platforms that bring their own speech (LiveKit Agents, Pipecat, Vapi, Retell; docs/bridge.md). Needs `HANDSET_BRIDGE_TOKEN`.",
			field: func(c *Config) any { return &c.Bridge.On }},
		{Env: "HANDSET_BRIDGE_TOKEN", YAML: "bridge.token", Kind: KindSecret, DefaultText: "empty: required with `HANDSET_BRIDGE=true`",
			Help:  "The bearer token the agent bridge's clients present (their OpenAI API key), or several separated by commas, one for each platform, so each has its own limits and can be taken back alone. Each at least 32 characters, and none of Handset's other tokens.",
			check: checkTokenList,
			field: func(c *Config) any { return &c.Bridge.Token }},
		{Env: "HANDSET_BRIDGE_RATE", YAML: "bridge.rate", Kind: KindInt, Default: "600", positive: true,
			Help:  "Turns a minute each bridge token may start (a quarter of them at once in a burst); over it the bridge answers 429 with `Retry-After`.",
			field: func(c *Config) any { return &c.Bridge.Rate }},
		{Env: "HANDSET_BRIDGE_MAX_TURNS", YAML: "bridge.max_turns", Kind: KindInt, Default: "200", positive: true,
			Help:  "Turns each bridge token may have running at once; more are answered 429.",
			field: func(c *Config) any { return &c.Bridge.MaxTurns }},
		{Env: "HANDSET_RECORD", YAML: "record.enabled", Kind: KindBool, Default: "false",
			Help:  "Record each call as a two-channel WAV file (caller left, agent right, in step) in the call's folder, played back in the dashboard. Recording calls is regulated: many places need every party's consent (docs/recording.md); `HANDSET_RECORD_NOTICE` says so to callers.",
			field: func(c *Config) any { return &c.Record.On }},
		{Env: "HANDSET_RECORD_NOTICE", YAML: "record.notice", Kind: KindString, DefaultText: "empty: no notice",
			Help:  "Words spoken to every recorded call before anything else (\"This call is recorded.\"); empty: none.",
			field: func(c *Config) any { return &c.Record.Notice }},
		{Env: "HANDSET_RECORD_RETENTION", YAML: "record.retention", Kind: KindDuration, Default: "720h",
			Help:  "How long recordings are kept; a job deletes older ones. `0` keeps them until you delete them.",
			field: func(c *Config) any { return &c.Record.Retention }},
		{Env: "OTEL_EXPORTER_OTLP_ENDPOINT", YAML: "otel.endpoint", Kind: KindURL, DefaultText: "empty: no traces exported",
			Help:  "An OpenTelemetry collector's OTLP/HTTP address (`http://collector:4318`): each call is exported as a trace, with a span per turn stage and the journal's figures. The other standard `OTEL_*` variables (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, …) apply as usual.",
			field: func(c *Config) any { return &c.OTLPEndpoint }},
		{Env: "HANDSET_BROWSER_MAX_CALLS", YAML: "browser_max_calls", Kind: KindInt, Default: "4", positive: true,
			DefaultText: "`4`, or `HANDSET_MAX_CALLS` when that is lower",
			Help:        "Most browser calls this node handles at once, so browser callers cannot take every call `HANDSET_MAX_CALLS` allows from phone callers. At most `HANDSET_MAX_CALLS`.",
			field:       func(c *Config) any { return &c.BrowserMaxCalls }},
		{Env: "HANDSET_MAX_CALLS", YAML: "max_calls", Kind: KindInt, Default: "200", positive: true,
			Help:  "Most calls this node handles at once; further calls are turned away.",
			field: func(c *Config) any { return &c.MaxCalls }},
		{Env: "HANDSET_DRAIN_TIMEOUT", YAML: "drain_timeout", Kind: KindDuration, Default: "30s",
			Help:  "On shutdown, how long calls in progress may go on before Handset ends them. New calls are refused at once.",
			field: func(c *Config) any { return &c.DrainTimeout }},
		{Env: "HANDSET_NODE_ID", YAML: "node_id", Kind: KindString, DefaultText: "the host name and process id",
			Help:  "Names this process in job leases and call records. Every node sharing a database needs its own.",
			field: func(c *Config) any { return &c.NodeID }},
		{Env: "HANDSET_JOB_LEASE", YAML: "job_lease", Kind: KindDuration, Default: "30s", positive: true,
			Help:  "How long a node's claim on a job (an outbound call, a transfer) lasts without a heartbeat, and how long a node may go without its own heartbeat (sent every third of this) before the others count it lost. A node that dies gives its jobs to others, and has its live calls ended as `node_lost`, this long after its last heartbeat.",
			field: func(c *Config) any { return &c.JobLease }},

		// Outbound calls.
		{Env: "HANDSET_OUTBOUND_CONCURRENCY", YAML: "outbound.concurrency", Kind: KindInt, Default: "10", positive: true,
			Help:  "Most outbound calls (calls, dialer lists, deliveries) this node has in progress at once.",
			field: func(c *Config) any { return &c.Outbound.Concurrency }},
		{Env: "HANDSET_OUTBOUND_RATE", YAML: "outbound.rate", Kind: KindInt, Default: "30",
			Help:  "Most outbound calls this node places in any minute; 0 for no limit. Several nodes together place up to their sum.",
			field: func(c *Config) any { return &c.Outbound.Rate }},
		{Env: "HANDSET_QUIET_HOURS", YAML: "outbound.quiet_hours", Kind: KindString,
			Help:  "A daily window with no outbound calls, `HH:MM-HH:MM` in 24-hour time (`21:00-08:00` crosses midnight). Calls due inside it wait until it ends. Empty: none.",
			field: func(c *Config) any { return &c.Outbound.QuietHours }},
		{Env: "HANDSET_QUIET_HOURS_ZONE", YAML: "outbound.quiet_hours_zone", Kind: KindString, Default: "UTC", Required: true,
			Help:  "IANA time zone of the quiet hours, such as `America/New_York`.",
			field: func(c *Config) any { return &c.Outbound.QuietZone }},
		{Env: "HANDSET_MACHINE_DETECTION", YAML: "outbound.machine_detection", Kind: KindEnum, Default: "hangup", Required: true,
			Allowed: []string{"hangup", "message", "talk"},
			Help:    "When an answering machine picks up an outbound call: `hangup` at once, leave the first message after the beep (`message`), or `talk` as with a person (no detection). Deliveries always leave their message.",
			field:   func(c *Config) any { return &c.Outbound.Machine }},
		{Env: "HANDSET_RING_TIMEOUT", YAML: "outbound.ring_timeout", Kind: KindDuration, Default: "30s", positive: true,
			Help:  "How long an outbound call rings before it counts as not answered (and is retried later, if attempts are left).",
			field: func(c *Config) any { return &c.Outbound.RingTimeout }},
		{Env: "HANDSET_CALL_ALLOW", YAML: "outbound.call_allow", Kind: KindString,
			Help:  "Numbers the tools token (`HANDSET_TOOLS_TOKEN`) may place outbound calls to (`POST /api/calls`), written like `HANDSET_TRANSFER_ALLOW`: E.164 numbers, or prefixes ending in `*`. Empty: none. The API token is not limited by it.",
			field: func(c *Config) any { return &c.Outbound.CallAllow }},

		// Handoff.
		{Env: "HANDSET_TRANSFER_ALLOW", YAML: "handoff.transfer_allow", Kind: KindString,
			Help:  "Comma-separated numbers calls may be transferred to, in E.164 form; a trailing `*` allows a prefix (`+1415555*`). Empty: no transfers. The allow-list stops a misled agent from sending callers to premium-rate numbers.",
			field: func(c *Config) any { return &c.Handoff.TransferAllow }},
		{Env: "HANDSET_HANDOFF_URL", YAML: "handoff.url", Kind: KindURL,
			Help:  "The agent runtime's webhook that continues a conversation in another channel: Handset posts the transcript and session key there (`POST /api/calls/{id}/handoff`). Empty: no channel handoffs.",
			field: func(c *Config) any { return &c.Handoff.URL }},
		{Env: "HANDSET_HANDOFF_KEY", YAML: "handoff.key", Kind: KindSecret,
			Help:  "Bearer key sent to `HANDSET_HANDOFF_URL`.",
			field: func(c *Config) any { return &c.Handoff.Key }},
	}
}
