package config

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/registry"
)

// Agent runtimes accepted by HANDSET_AGENT.
const (
	AgentHermes   = "hermes"
	AgentOpenClaw = "openclaw"
	AgentOpenAI   = "openai"
	AgentWebhook  = "webhook"
	AgentEcho     = "echo"
)

// Speech-to-text providers accepted by HANDSET_STT.
const (
	STTDeepgram = "deepgram"
	STTOpenAI   = "openai"
	STTSphinx   = "sphinx"
)

// Text-to-speech providers accepted by HANDSET_TTS.
const (
	TTSElevenLabs = "elevenlabs"
	TTSOpenAI     = "openai"
	TTSFlite      = "flite"
	TTSEspeak     = "espeak"
)

// Voice activity detectors accepted by HANDSET_VAD.
const (
	VADSilero = "silero"
	VADWebRTC = "webrtc"
	VADEnergy = "energy"
)

// Echo handling accepted by HANDSET_ECHO.
const (
	EchoAuto = "auto"
	EchoOff  = "off"
)

// SessionKeyFromCallerHash is the HANDSET_SESSION_KEY_FROM value that derives the agent's memory
// key from the caller's hashed number.
const SessionKeyFromCallerHash = "caller_hash"

// Per-runtime agent defaults, used when HANDSET_AGENT_URL or HANDSET_AGENT_MODEL is empty.
const (
	DefaultHermesURL     = "http://127.0.0.1:8642/v1"
	DefaultOpenClawURL   = "http://127.0.0.1:18789"
	DefaultHermesModel   = "hermes-agent"
	DefaultOpenClawModel = "openclaw/main"
	DefaultOpenAIModel   = "gpt-4o-mini"
)

// Variables that supply the agent key when HANDSET_AGENT_KEY is empty. They are read from the
// environment and dotenv files only; they are not settings of their own.
const (
	HermesKeyVar   = "API_SERVER_KEY"
	OpenClawKeyVar = "OPENCLAW_GATEWAY_TOKEN"
)

// Config is every Handset setting, typed. Build one with Default or Load; check it with Validate.
// Field comments name the environment variable; docs/configuration.md explains each one.
type Config struct {
	Listen      string // HANDSET_LISTEN
	PublicURL   string // HANDSET_PUBLIC_URL
	DataDir     string // HANDSET_DATA_DIR
	DatabaseURL Secret // HANDSET_DATABASE_URL
	PhoneNumber string // HANDSET_PHONE_NUMBER
	APIToken    Secret // HANDSET_API_TOKEN
	ToolsToken  Secret // HANDSET_TOOLS_TOKEN
	MaxCalls    int    // HANDSET_MAX_CALLS
	// DrainTimeout is how long a stopping server lets calls finish (HANDSET_DRAIN_TIMEOUT).
	DrainTimeout time.Duration
	EnginesDir   string // HANDSET_ENGINES_DIR
	Browser      bool   // HANDSET_BROWSER: serve the browser call page
	// Dashboard serves the operator's pages at /dashboard (HANDSET_DASHBOARD); DashboardToken
	// (HANDSET_DASHBOARD_TOKEN) signs in to them without the API token's numbers.
	Dashboard      bool
	DashboardToken Secret
	// Bridge is the agent bridge (HANDSET_BRIDGE, HANDSET_BRIDGE_TOKEN, HANDSET_BRIDGE_RATE,
	// HANDSET_BRIDGE_MAX_TURNS); BridgeTokens splits the token setting.
	Bridge struct {
		On             bool
		Token          Secret
		Rate, MaxTurns int
	}
	// OTLPEndpoint turns on OpenTelemetry trace export (OTEL_EXPORTER_OTLP_ENDPOINT).
	OTLPEndpoint string
	NodeID       string // HANDSET_NODE_ID; empty means host name and process id, see Config.Node
	// JobLease is how long a job claim lasts without a heartbeat (HANDSET_JOB_LEASE).
	JobLease time.Duration

	// The browser page's guards: HANDSET_BROWSER_HOSTS, HANDSET_BROWSER_TOKEN and
	// HANDSET_BROWSER_MAX_CALLS (read them with BrowserHostList and BrowserCallCap).
	BrowserHosts    string
	BrowserToken    Secret
	BrowserMaxCalls int
	// TrustedProxies lists the peers whose X-Forwarded-* headers are believed
	// (HANDSET_TRUSTED_PROXIES; ParseTrustedProxies reads it).
	TrustedProxies string

	Outbound OutboundConfig
	Handoff  HandoffConfig

	Agent   AgentConfig
	Session SessionConfig
	STT     STTConfig
	TTS     TTSConfig
	OpenAI  OpenAIConfig
	VAD     VADConfig
	Twilio  TwilioConfig
	// Carrier is HANDSET_CARRIER: the carrier outbound calls go through; empty: the only
	// configured one, else the first configured in the catalogue's order.
	Carrier  string
	Messages MessagesConfig
	Turn     TurnConfig
	Record   RecordConfig
	Log      LogConfig

	// Carriers holds the settings carriers declare in the registry; read them with Value.
	Carriers CarrierSettings

	// What Load learned on the way; nil for a Config built by Default. A pointer, so printing a
	// Config shows an address rather than the bookkeeping.
	info *loadInfo
}

// RecordConfig says whether and how calls are recorded.
type RecordConfig struct {
	On        bool          // HANDSET_RECORD
	Notice    string        // HANDSET_RECORD_NOTICE: spoken before anything else; empty: none
	Retention time.Duration // HANDSET_RECORD_RETENTION: recordings older are deleted; 0 keeps them
}

// OutboundConfig says when and how Handset places calls.
type OutboundConfig struct {
	Concurrency int           // HANDSET_OUTBOUND_CONCURRENCY
	Rate        int           // HANDSET_OUTBOUND_RATE, calls a minute
	QuietHours  string        // HANDSET_QUIET_HOURS
	QuietZone   string        // HANDSET_QUIET_HOURS_ZONE
	Machine     string        // HANDSET_MACHINE_DETECTION
	RingTimeout time.Duration // HANDSET_RING_TIMEOUT
	CallAllow   string        // HANDSET_CALL_ALLOW: where the tools token may place calls
}

// HandoffConfig is where calls are handed: people (transfers) and other channels.
type HandoffConfig struct {
	TransferAllow string // HANDSET_TRANSFER_ALLOW
	URL           string // HANDSET_HANDOFF_URL
	Key           Secret // HANDSET_HANDOFF_KEY
}

// AgentConfig selects and reaches the agent runtime.
type AgentConfig struct {
	Runtime      string        // HANDSET_AGENT
	URL          string        // HANDSET_AGENT_URL; empty means the runtime's default, see Config.AgentURL
	Key          Secret        // HANDSET_AGENT_KEY, or the runtime's fallback variable
	Model        string        // HANDSET_AGENT_MODEL; empty means the runtime's default, see Config.AgentModel
	Timeout      time.Duration // HANDSET_AGENT_TIMEOUT: the longest silence within a turn
	TurnTimeout  time.Duration // HANDSET_AGENT_TURN_TIMEOUT: the longest a whole turn may take
	HistoryLimit int           // HANDSET_AGENT_HISTORY_LIMIT: messages of the call kept and sent; 0 all
	SystemPrompt string        // HANDSET_SYSTEM_PROMPT
	// SystemPromptAsUser: HANDSET_SYSTEM_PROMPT_AS_USER.
	SystemPromptAsUser bool
	Transport          string // HANDSET_AGENT_TRANSPORT
	CAFile             string // HANDSET_AGENT_CA_FILE: PEM certificates trusted besides the system's
	TLSInsecure        bool   // HANDSET_AGENT_TLS_INSECURE: no certificate check (development only)
}

// SessionConfig says how calls map to the agent runtime's memory.
type SessionConfig struct {
	Key              string // HANDSET_SESSION_KEY
	KeyFrom          string // HANDSET_SESSION_KEY_FROM
	CallerHashSecret Secret // HANDSET_CALLER_HASH_SECRET
	// CallerMemoryAttestation: HANDSET_CALLER_MEMORY_ATTESTATION (any, B, A).
	CallerMemoryAttestation string
}

// STTConfig selects speech-to-text.
type STTConfig struct {
	Provider string // HANDSET_STT
	Fallback string // HANDSET_STT_FALLBACK: hears the caller while Provider is down
	Deepgram DeepgramConfig
	Sphinx   SphinxConfig
	// OpenAIModel is the transcription model of HANDSET_STT=openai (HANDSET_OPENAI_STT_MODEL).
	OpenAIModel string
}

// SphinxConfig is the embedded PocketSphinx recognizer.
type SphinxConfig struct {
	Model    string // HANDSET_SPHINX_MODEL
	Decoders int    // HANDSET_SPHINX_DECODERS
}

// DeepgramConfig reaches Deepgram or a compatible server.
type DeepgramConfig struct {
	Key      Secret // DEEPGRAM_API_KEY
	URL      string // HANDSET_DEEPGRAM_URL
	Model    string // HANDSET_DEEPGRAM_MODEL
	Language string // HANDSET_DEEPGRAM_LANGUAGE
}

// TTSConfig selects text-to-speech.
type TTSConfig struct {
	Provider   string        // HANDSET_TTS
	Fallback   string        // HANDSET_TTS_FALLBACK: speaks what Provider cannot
	Timeout    time.Duration // HANDSET_TTS_TIMEOUT
	ElevenLabs ElevenLabsConfig
	OpenAI     OpenAITTSConfig
	// FliteVoice and FliteWidebandVoice are the embedded voices for 8 kHz phone calls and for
	// wideband (browser) calls (HANDSET_FLITE_VOICE, HANDSET_FLITE_WIDEBAND_VOICE).
	FliteVoice, FliteWidebandVoice string
	EspeakVoice                    string // HANDSET_ESPEAK_VOICE
}

// OpenAITTSConfig is HANDSET_TTS=openai's model and voice.
type OpenAITTSConfig struct {
	Model string // HANDSET_OPENAI_TTS_MODEL
	Voice string // HANDSET_OPENAI_TTS_VOICE
}

// ElevenLabsConfig reaches ElevenLabs or a compatible server.
type ElevenLabsConfig struct {
	Key   Secret // ELEVENLABS_API_KEY
	URL   string // HANDSET_ELEVENLABS_URL
	Voice string // HANDSET_ELEVENLABS_VOICE
	Model string // HANDSET_ELEVENLABS_MODEL
}

// OpenAIConfig is the OpenAI account used by the openai STT and TTS providers, and by the openai
// agent runtime unless HANDSET_AGENT_URL or HANDSET_AGENT_KEY say otherwise.
type OpenAIConfig struct {
	Key Secret // OPENAI_API_KEY
	URL string // HANDSET_OPENAI_URL
}

// VADConfig selects voice activity detection.
type VADConfig struct {
	Engine    string        // HANDSET_VAD; empty means the best engine built in
	Start     time.Duration // HANDSET_VAD_START
	End       time.Duration // HANDSET_VAD_END
	Threshold string        // HANDSET_VAD_THRESHOLD, a probability; see VADThreshold
}

// TwilioConfig is the Twilio account.
type TwilioConfig struct {
	AccountSID string // TWILIO_ACCOUNT_SID
	AuthToken  Secret // TWILIO_AUTH_TOKEN
	APIURL     string // HANDSET_TWILIO_API_URL
}

// MessagesConfig holds what Handset itself says on a call.
type MessagesConfig struct {
	First         string        // HANDSET_FIRST_MESSAGE
	LongTurn      string        // HANDSET_LONG_TURN_MESSAGE; see Spoken for "off"
	LongTurnAfter time.Duration // HANDSET_LONG_TURN_AFTER
	Error         string        // HANDSET_ERROR_MESSAGE
	Silence       string        // HANDSET_SILENCE_MESSAGE
	Drain         string        // HANDSET_DRAIN_MESSAGE
	STTError      string        // HANDSET_STT_ERROR_MESSAGE
}

// TurnConfig holds the turn-taking knobs.
type TurnConfig struct {
	TailGrace               time.Duration // HANDSET_TAIL_GRACE
	BargeInConfirm          time.Duration // HANDSET_BARGE_IN_CONFIRM
	ForwardSTTWhileSpeaking bool          // HANDSET_FORWARD_STT_WHILE_SPEAKING
	BargeInGate             time.Duration // HANDSET_BARGE_IN_GATE
	Echo                    string        // HANDSET_ECHO
	EchoMaxDelay            time.Duration // HANDSET_ECHO_MAX_DELAY
	MaxCall                 time.Duration // HANDSET_MAX_CALL
	BargeInMinWords         int           // HANDSET_BARGE_IN_MIN_WORDS
	SilenceReprompt         time.Duration // HANDSET_SILENCE_REPROMPT
	SilenceHangup           time.Duration // HANDSET_SILENCE_HANGUP
}

// LogConfig selects log verbosity and format.
type LogConfig struct {
	Level  string // HANDSET_LOG_LEVEL
	Format string // HANDSET_LOG_FORMAT
}

// Default returns the built-in defaults: the Default of every Setting. It passes
// Validate(ValidateOptions{}); serve still needs an agent runtime.
func Default() *Config {
	c := &Config{}
	for _, s := range settingTable() {
		if err := s.set(c, s.Default); err != "" {
			// The table's own defaults are checked by the tests; reaching this is a bug.
			panic("config: bad default for " + s.Env + ": " + err)
		}
	}
	return c
}

// AgentURL is the agent runtime's base URL: HANDSET_AGENT_URL, or the runtime's default when it
// is empty (Hermes and OpenClaw on localhost, the openai runtime at HANDSET_OPENAI_URL), as
// the runtime says in the registry. It is empty for webhook without a URL and for echo.
func (c *Config) AgentURL() string {
	if c.Agent.URL != "" {
		return c.Agent.URL
	}
	if a, ok := registry.Find[registry.Agent](c.Agent.Runtime); ok && a.DefaultURL != nil {
		return a.DefaultURL(c)
	}
	return ""
}

// AgentModel is the model or agent id sent to the runtime: HANDSET_AGENT_MODEL, or the runtime's
// default (from the registry) when it is empty.
func (c *Config) AgentModel() string {
	if c.Agent.Model != "" {
		return c.Agent.Model
	}
	if a, ok := registry.Find[registry.Agent](c.Agent.Runtime); ok {
		return a.DefaultModel
	}
	return ""
}

// Source says where the value of the setting named by its environment variable came from:
// "default", "config file handset.yaml:7", "env file .env:3", "environment" or "flag", with
// " via NAME" when another variable supplied it (the agent key fallbacks). It names the layer
// that supplied the value even when that value was invalid and Validate reports it. It is ""
// for a name that is not a setting.
func (c *Config) Source(env string) string {
	o, ok := c.Origin(env)
	if !ok {
		return ""
	}
	return o.String()
}

// Origin is the structured form of Source. ok is false for a name that is not a setting.
func (c *Config) Origin(env string) (o Origin, ok bool) {
	if _, found := lookupSetting(settingTable(), env); !found {
		return Origin{}, false
	}
	return c.info.origin(env), true
}

// ConfigFile is the YAML file Load read, or "" when there was none.
func (c *Config) ConfigFile() string {
	if c.info == nil {
		return ""
	}
	return c.info.configFile
}

// EnvFiles are the dotenv files Load read, in the order given.
func (c *Config) EnvFiles() []string {
	if c.info == nil {
		return nil
	}
	return slices.Clone(c.info.envFiles)
}

// loadInfo is what Load records besides the values. It is written once, by Load.
type loadInfo struct {
	origins    map[string]Origin // keyed by environment variable name
	raw        map[string]string // non-secret values as written, keyed by environment variable name
	problems   []FieldError      // values that did not parse into their field
	warnings   []Warning         // names that are not settings
	configFile string
	envFiles   []string
}

// origin is where the setting came from; FromDefault when nothing is recorded.
func (l *loadInfo) origin(env string) Origin {
	if l == nil {
		return Origin{Kind: FromDefault}
	}
	return l.origins[env]
}

func (l *loadInfo) rawValue(env string) (string, bool) {
	if l == nil {
		return "", false
	}
	v, ok := l.raw[env]
	return v, ok
}

func (l *loadInfo) problemFor(env string) *FieldError {
	if l == nil {
		return nil
	}
	for i := range l.problems {
		if l.problems[i].Env == env {
			return &l.problems[i]
		}
	}
	return nil
}

// LongTurnMessage is the filler a slow turn gets: HANDSET_LONG_TURN_MESSAGE, or "" (no
// filler) when it says `off` or `none`. An empty variable counts as unset, so the default
// filler is turned off with a word.
func (c *Config) LongTurnMessage() string {
	switch strings.ToLower(strings.TrimSpace(c.Messages.LongTurn)) {
	case "off", "none":
		return ""
	}
	return c.Messages.LongTurn
}

// VADThreshold is HANDSET_VAD_THRESHOLD as a probability (Validate has checked it).
func (c *Config) VADThreshold() float64 {
	p, _ := strconv.ParseFloat(c.VAD.Threshold, 64)
	return p
}

// Node is the name of this process in job leases and call records: HANDSET_NODE_ID, or
// the host name and process id.
func (c *Config) Node() string {
	if c.NodeID != "" {
		return c.NodeID
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "handset"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// BridgeTokens are the agent bridge's tokens: HANDSET_BRIDGE_TOKEN split at commas, each
// trimmed, empty ones left out.
func (c *Config) BridgeTokens() []string {
	var out []string
	for _, t := range strings.Split(c.Bridge.Token.Reveal(), ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
