package cli

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/config"
)

// runtimeDefaults are what a scaffolded project sets for each runtime.
type runtimeDefaults struct {
	label, url, model, keyVar, keyHint string
}

var setupRuntimes = map[string]runtimeDefaults{
	config.AgentHermes: {"Hermes Agent", config.DefaultHermesURL, config.DefaultHermesModel, "HANDSET_AGENT_KEY",
		"the API_SERVER_KEY from ~/.hermes/.env (handset setup --generate-key writes the same key to both)"},
	config.AgentOpenClaw: {"OpenClaw", config.DefaultOpenClawURL, "openclaw/support", config.OpenClawKeyVar,
		"the gateway's token (gateway.auth.token in ~/.openclaw/openclaw.json)"},
	config.AgentOpenAI: {"an OpenAI-compatible server", "https://api.openai.com/v1", config.DefaultOpenAIModel, "HANDSET_AGENT_KEY",
		"the server's API key (any value for Ollama)"},
}

// offlineOllama is what --offline --runtime openai points at: Ollama on this machine.
var offlineOllama = runtimeDefaults{"Ollama", "http://127.0.0.1:11434/v1", "llama3.2", "HANDSET_AGENT_KEY",
	"not needed for Ollama; the API key of another OpenAI-compatible server"}

// projectRuntime is the runtime's defaults as this project uses them.
func projectRuntime(o setupOptions) runtimeDefaults {
	if o.offline && o.runtime == config.AgentOpenAI {
		return offlineOllama
	}
	return setupRuntimes[o.runtime]
}

// scaffold returns the project files for o; key, when set, goes into .env.
func scaffold(o setupOptions, key string) []projectFile {
	rt := projectRuntime(o)
	// The placeholder is for replacing; doctor says so. Offline projects start with the
	// browser page and need no public address until a phone number comes.
	public := "public_url: https://voice.example.com   # replace: where Twilio reaches this server (behind TLS)"
	switch {
	case o.url != "":
		public = "public_url: " + o.url + "   # where Twilio reaches this server (behind TLS)"
	case o.offline:
		public = "# public_url: https://voice.example.com   # for phone calls: where Twilio reaches this server (behind TLS)\nbrowser: true   # the call page at http://127.0.0.1:8080/"
	}
	speech := `stt:
  provider: deepgram
tts:
  provider: elevenlabs`
	keys := `# Speech: a Deepgram key (https://console.deepgram.com) and an ElevenLabs key
# (https://elevenlabs.io/app/settings/api-keys).
DEEPGRAM_API_KEY=
ELEVENLABS_API_KEY=`
	if o.offline {
		speech = `# Speech on this machine, no keys: PocketSphinx and flite (demo quality; for real
# calls use deepgram and elevenlabs, with their keys in .env).
stt:
  provider: sphinx
tts:
  provider: flite`
		keys = `# Speech runs on this machine (sphinx and flite): no keys.`
	}
	yaml := fmt.Sprintf(`# Handset settings for %[1]s. Every key here is also an environment variable
# (docs/configuration.md); the environment and .env win over this file. Secrets belong in
# .env, never here.
listen: 127.0.0.1:8080
%[2]s
data_dir: ./handset-data

agent:
  runtime: %[3]s
  url: %[4]s
  model: %[5]s
session:
  key_from: caller_hash   # the same caller reaches the same agent memory on every call

%[6]s

messages:
  first: "Hi! How can I help?"
  long_turn: "One moment, let me check that."
  error: "Sorry, something went wrong on my side. Could you say that again?"
`, rt.label, public, o.runtime, rt.url, rt.model, speech)

	example := fmt.Sprintf(`# Copy to .env and fill in. Handset loads .env from its working folder; the real
# environment always wins. Keep .env out of version control.

# %[1]s: %[2]s
%[1]s=

%[3]s

# Twilio: the account SID and auth token from https://console.twilio.com, and the number.
TWILIO_ACCOUNT_SID=
TWILIO_AUTH_TOKEN=
HANDSET_PHONE_NUMBER=
`, rt.keyVar, rt.keyHint, keys)

	files := []projectFile{
		{"handset.yaml", yaml, 0o644},
		{".env.example", example, 0o644},
		{"handset.service", systemdUnit(o.dir), 0o644},
		{"README.md", projectReadme(o, rt), 0o644},
		{".gitignore", ".env\nhandset-data/\n", 0o644},
	}
	if key != "" {
		files = append(files, projectFile{".env", fmt.Sprintf("# Written by handset setup --generate-key: the same key is Hermes' API_SERVER_KEY.\n%s=%s\n", rt.keyVar, key), 0o600})
	}
	return files
}

// systemdUnit runs `handset serve` in the project folder; SIGTERM drains calls first.
func systemdUnit(dir string) string {
	return fmt.Sprintf(`[Unit]
Description=Handset: a phone number and a voice for your agent
After=network-online.target
Wants=network-online.target

[Service]
# Install: copy this folder to /opt/%[1]s; from the Handset checkout run
#   sudo ./bin/handset install    (the binary to /usr/local/bin, its engine files to /usr/local/share/handset/engines)
# then
#   sudo cp handset.service /etc/systemd/system/ && sudo systemctl enable --now handset
WorkingDirectory=/opt/%[1]s
ExecStart=/usr/local/bin/handset serve
# A stop drains calls for up to HANDSET_DRAIN_TIMEOUT (30 s) before ending them.
KillSignal=SIGTERM
TimeoutStopSec=40
Restart=on-failure
RestartSec=2
DynamicUser=yes
StateDirectory=handset
Environment=HANDSET_DATA_DIR=/var/lib/handset
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=read-only

[Install]
WantedBy=multi-user.target
`, strings.Trim(dir, "/"))
}

func projectReadme(o setupOptions, rt runtimeDefaults) string {
	hs := cmp.Or(o.binaryPath, "handset")
	made := "handset setup --runtime " + o.runtime
	if o.offline {
		made += " --offline"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# A phone number for %s\n\nMade by `%s`.\n", rt.label, made)
	if hs != "handset" {
		// The binary that made the folder is not the `handset` on PATH (if any).
		fmt.Fprintf(&b, "\nThe commands below run `%s`, the binary that made this folder. With\n`handset` on your PATH (`handset install`), plain `handset` works too.\n", hs)
	}
	fmt.Fprintf(&b, `
1. `+"`cp .env.example .env`"+` and fill it in (`+"`%[2]s`"+` is %[3]s).
2. `+"`%[1]s doctor`"+`: every check should pass; each problem comes with its fix.
3. `+"`%[1]s test`"+`: one real turn through %[4]s, and the speech services heard end to end.
`, hs, rt.keyVar, rt.keyHint, rt.label)
	if o.offline {
		fmt.Fprintf(&b, "4. `%s serve`, then open http://127.0.0.1:8080/ and press Call: speech stays on this machine.\n", hs)
		fmt.Fprintf(&b, "5. For phone calls: set `public_url` to this server's https address (a reverse proxy or a\n   tunnel), then `%s attach-number $HANDSET_PHONE_NUMBER` points the Twilio number here.\n", hs)
	} else {
		fmt.Fprintf(&b, "4. `%s serve`, behind TLS at `public_url` (a reverse proxy or a tunnel).\n", hs)
		fmt.Fprintf(&b, "5. `%s attach-number $HANDSET_PHONE_NUMBER` points the Twilio number here. Call it.\n", hs)
	}
	fmt.Fprintf(&b, `
`+"`handset.service`"+` runs it under systemd. Every call writes a journal under
`+"`handset-data/calls/`"+`; `+"`%[1]s trace`"+` and `+"`%[1]s diagnose`"+` read the latest one.
`, hs)
	return b.String()
}
