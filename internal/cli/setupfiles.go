package cli

import (
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

// scaffold returns the project files for o; key, when set, goes into .env.
func scaffold(o setupOptions, key string) []projectFile {
	rt := setupRuntimes[o.runtime]
	publicURL := o.url
	if publicURL == "" {
		publicURL = "https://voice.example.com"
	}
	yaml := fmt.Sprintf(`# Handset settings for %[1]s. Every key here is also an environment variable
# (docs/configuration.md); the environment and .env win over this file. Secrets belong in
# .env, never here.
listen: 127.0.0.1:8080
public_url: %[2]s      # where Twilio reaches this server (behind TLS)
data_dir: ./handset-data

agent:
  runtime: %[3]s
  url: %[4]s
  model: %[5]s
session:
  key_from: caller_hash   # the same caller reaches the same agent memory on every call

stt:
  provider: deepgram
tts:
  provider: elevenlabs

messages:
  first: "Hi! How can I help?"
  long_turn: "One moment, let me check that."
  error: "Sorry, something went wrong on my side. Could you say that again?"
`, rt.label, publicURL, o.runtime, rt.url, rt.model)

	example := fmt.Sprintf(`# Copy to .env and fill in. Handset loads .env from its working folder; the real
# environment always wins. Keep .env out of version control.

# %[1]s: %[2]s
%[1]s=

# Speech: a Deepgram key (https://console.deepgram.com) and an ElevenLabs key
# (https://elevenlabs.io/app/settings/api-keys).
DEEPGRAM_API_KEY=
ELEVENLABS_API_KEY=

# Twilio: the account SID and auth token from https://console.twilio.com, and the number.
TWILIO_ACCOUNT_SID=
TWILIO_AUTH_TOKEN=
HANDSET_PHONE_NUMBER=
`, rt.keyVar, rt.keyHint)

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
# Install: copy this folder to /opt/%[1]s and handset to /usr/local/bin, then
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
	return fmt.Sprintf(`# A phone number for %[1]s

Made by `+"`handset setup --runtime %[2]s`"+`.

1. `+"`cp .env.example .env`"+` and fill it in (`+"`%[3]s`"+` is %[4]s).
2. `+"`handset doctor`"+`: every check should pass; each problem comes with its fix.
3. `+"`handset test`"+`: one real turn through %[1]s, and the speech services heard end to end.
4. `+"`handset serve`"+`, behind TLS at `+"`public_url`"+` (a reverse proxy or a tunnel).
5. `+"`handset attach-number $HANDSET_PHONE_NUMBER`"+` points the Twilio number here. Call it.

`+"`handset.service`"+` runs it under systemd. Every call writes a journal under
`+"`handset-data/calls/`"+`; `+"`handset trace`"+` and `+"`handset diagnose`"+` read the latest one.
`, rt.label, o.runtime, rt.keyVar, rt.keyHint)
}
