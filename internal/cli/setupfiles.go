package cli

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/registry"
)

// runtimeDefaults are what a scaffolded project sets for each runtime.
type runtimeDefaults struct {
	label, url, model, keyVar, keyHint string
}

var setupRuntimes = map[string]runtimeDefaults{
	config.AgentHermes: {"Hermes Agent", config.DefaultHermesURL, config.DefaultHermesModel, "HANDSET_AGENT_KEY",
		"the API_SERVER_KEY from ~/.hermes/.env (handset setup --generate-key writes the same key to both)"},
	config.AgentOpenClaw: {"OpenClaw", config.DefaultOpenClawURL, "openclaw/voice", config.OpenClawKeyVar,
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
	rt := setupRuntimes[o.runtime]
	if o.runtime == config.AgentOpenClaw && o.openclawAgent != "" {
		rt.model = "openclaw/" + o.openclawAgent
	}
	return rt
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
%[7]s`, rt.label, public, o.runtime, rt.url, rt.model, speech, callingSettings(o))

	example := fmt.Sprintf(`# Copy to .env and fill in. Handset loads .env from its working folder; the real
# environment always wins. Keep .env out of version control.

# %[1]s: %[2]s
%[1]s=

%[3]s

# Twilio: the account SID and auth token from https://console.twilio.com, and the number.
TWILIO_ACCOUNT_SID=
TWILIO_AUTH_TOKEN=
HANDSET_PHONE_NUMBER=
%[5]s
# The token your agent's tools use for Handset's API: deliveries, transfers, handoffs%[4]s.
# 32 characters or more (openssl rand -hex 32 makes one). Never the API token, which
# opens everything and stays with you (handset-data/api-token when not set here).
HANDSET_TOOLS_TOKEN=
`, rt.keyVar, rt.keyHint, keys, toolsTokenReach(o), carrierEnvBlocks(registry.All[registry.Carrier]()))

	files := []projectFile{
		{"handset.yaml", yaml, 0o644},
		{".env.example", example, 0o644},
		{"README.md", projectReadme(o, rt), 0o644},
		{".gitignore", ".env\nhandset-data/\n*.log\n", 0o644},
	}
	files = append(files, serviceFiles(o)...)
	if key != "" {
		what := "the same key is Hermes' API_SERVER_KEY"
		if o.runtime != config.AgentHermes {
			what = "the runtime's key"
		}
		files = append(files, projectFile{".env", fmt.Sprintf("# Written by handset setup: %s.\n%s=%s\n", what, rt.keyVar, key), 0o600})
	}
	return files
}

// callingSettings are handset.yaml's lines for who may be called: the number calls come
// from, the transfer allow-list and, for outbound projects, the call allow-list. Empty
// lists allow nobody, which is where a new project starts.
func callingSettings(o setupOptions) string {
	var b strings.Builder
	if o.number != "" {
		fmt.Fprintf(&b, "\nphone_number: \"%s\"   # the Twilio number: calls come from it\n", o.number)
	}
	b.WriteString(`
handoff:
  # Numbers the agent may transfer a caller to: E.164, or a prefix ending in * (+1415555*).
  # Empty: no transfers. It keeps a misled agent from sending callers to premium-rate lines.
  transfer_allow: ""
`)
	if o.outbound() {
		b.WriteString(`
outbound:
  # Numbers the agent's tools (HANDSET_TOOLS_TOKEN) may call, written like transfer_allow.
  # Empty: none. Your own dialer list (dialer.txt) and the API token are not limited by it.
  call_allow: ""
  # quiet_hours: "21:00-08:00"      # no calls placed in this window...
  # quiet_hours_zone: America/New_York   # ...in this time zone
`)
	}
	return b.String()
}

// toolsTokenReach says what else the tools token reaches in this mode.
func toolsTokenReach(o setupOptions) string {
	if o.outbound() {
		return ",\n# and calls to the numbers on outbound.call_allow"
	}
	return ""
}

func projectReadme(o setupOptions, rt runtimeDefaults) string {
	hs := cmp.Or(o.binaryPath, "handset")
	made := "handset setup --runtime " + o.runtime
	if o.mode != modeInbound {
		made += " --mode " + o.mode
	}
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
	step := 4
	switch {
	case o.offline:
		fmt.Fprintf(&b, "%d. `%s serve`, then open http://127.0.0.1:8080/ and press Call: speech stays on this machine.\n", step, hs)
		step++
		if o.inbound() {
			fmt.Fprintf(&b, "%d. For phone calls: set `public_url` to this server's https address (a reverse proxy or a\n   tunnel), then `%s attach-number $HANDSET_PHONE_NUMBER` points the Twilio number here.\n", step, hs)
			step++
		}
	default:
		fmt.Fprintf(&b, "%d. `%s serve`, behind TLS at `public_url` (a reverse proxy or a tunnel).\n", step, hs)
		step++
		if o.inbound() {
			fmt.Fprintf(&b, "%d. `%s attach-number $HANDSET_PHONE_NUMBER` points the Twilio number here. Call it.\n", step, hs)
			step++
		}
	}
	if o.outbound() {
		fmt.Fprintf(&b, "%d. Outbound calls come from `HANDSET_PHONE_NUMBER` (`phone_number`). Put the numbers to call in\n"+
			"   `dialer.txt`, one a line, and `%s call --list dialer.txt --wait` calls each of them once.\n", step, hs)
	}
	b.WriteString(`
## Running it for good

`)
	fmt.Fprintf(&b, "- Linux: `handset.service` runs `handset serve` under systemd (install steps inside the file).\n")
	fmt.Fprintf(&b, "- macOS: `%s` runs it under launchd, from this folder:\n  `%s`.\n", plistServe, launchctlLoad(plistServe, launchdLabel(o.dir, "")))
	if o.outbound() {
		fmt.Fprintf(&b, "- The dialer: `handset-dialer.timer` (systemd, with `handset-dialer.service`) and `%s` (launchd:\n"+
			"  `%s`) run `handset call --list dialer.txt`\n"+
			"  every %d minutes, so a number added to the list is called within minutes, and each number only once\n"+
			"  (the batch is `dialer`; `%s call --list dialer.txt --wait` shows its progress). Turn it on once the\n"+
			"  list has numbers: with none it fails each time, which `systemctl status handset-dialer` shows.\n",
			plistDialer, launchctlLoad(plistDialer, launchdLabel(o.dir, "dialer")), dialerEvery, hs)
	}
	fmt.Fprintf(&b, "\nEvery call writes a journal under `handset-data/calls/`; `%[1]s trace` and `%[1]s diagnose` read the latest one.\n", hs)
	b.WriteString(securitySection(o))
	return b.String()
}

// securitySection is the README's day-1 security: what a phone line exposes, and what this
// project does about it from the start.
func securitySection(o setupOptions) string {
	var b strings.Builder
	b.WriteString(`
## Security from day 1

Anyone who can dial the number talks to your agent, and a caller can try to talk it into
anything. So:

`)
	if o.runtime == config.AgentOpenClaw {
		fmt.Fprintf(&b, "- **A scoped agent.** Calls reach the OpenClaw agent `%s` (`agent.model` in handset.yaml): an agent\n"+
			"  of its own, with no shell and no file tools. `handset setup --enable-openclaw` adds it to\n"+
			"  openclaw.json with `tools.deny: [%s]`:\n"+
			"  no shell, files, browser or terminal, paired devices, gateway, cron or plugin administration.\n"+
			"  Never point calls at your own `main` agent.\n",
			o.openclawAgent, `"`+strings.Join(voiceAgentDeny, `", "`)+`"`)
	} else {
		b.WriteString("- **A scoped agent.** The agent that answers calls gets only the tools callers should reach:\n" +
			"  no shell and no file tools, no browser. Keep your own all-powerful agent off the phone.\n")
	}
	calls := ""
	if o.outbound() {
		calls = ", and calls only the numbers on `outbound.call_allow`"
	}
	fmt.Fprintf(&b, "- **Tokens.** `HANDSET_API_TOKEN` opens all of Handset's API: it stays with you (unset, one is\n"+
		"  generated into `handset-data/api-token`). Your agent's tools get `HANDSET_TOOLS_TOKEN` (in `.env`)\n"+
		"  instead: it delivers messages, transfers and hands off calls, reads a call by its id without\n"+
		"  the caller's number%s; nothing else. The runtime's own key (`%s`) stays in `.env`.\n",
		calls, projectRuntime(o).keyVar)
	if o.outbound() {
		b.WriteString("- **Allow-lists.** `handoff.transfer_allow` (`HANDSET_TRANSFER_ALLOW`: where a call may be\n" +
			"  transferred) and `outbound.call_allow` (`HANDSET_CALL_ALLOW`: whom the agent's tools may call)\n" +
			"  start empty, which allows nobody. List only the numbers you mean.\n")
	} else {
		b.WriteString("- **Allow-list.** `handoff.transfer_allow` (`HANDSET_TRANSFER_ALLOW`: where a call may be\n" +
			"  transferred) starts empty, which allows nobody. List only the numbers you mean. Calls placed by\n" +
			"  the agent's tools have their own list, `HANDSET_CALL_ALLOW`, empty too.\n")
	}
	b.WriteString("- **TLS.** Handset speaks plain HTTP: put it behind a TLS proxy or tunnel at `public_url`, and\n" +
		"  keep `/api`, `/metrics` and `/debug` on a private network.\n" +
		"- **Secrets.** `.env` holds them: readable only by you (`chmod 600 .env`), and out of version\n" +
		"  control (`.gitignore` has it).\n" +
		"\nWhat Handset defends against, and what it leaves to you: [docs/security.md](" + securityDocURL + ").\n")
	return b.String()
}

// securityDocURL is docs/security.md where Handset's source lives (its module path).
const securityDocURL = "https://github.com/handset-voice/handset/blob/main/docs/security.md"

// carrierAccountNames are the settings a carrier declares that have no default: what a
// person fills in for its account (Twilio's are the table's own, and have their block).
func carrierAccountNames(c registry.Carrier) []string {
	var names []string
	for _, d := range c.Declares {
		if d.Default == "" {
			names = append(names, d.Env)
		}
	}
	return names
}

// carrierEnvBlocks are .env.example's blocks of the carriers that declare their settings:
// the account's settings to fill in, and the ones with a default commented out.
func carrierEnvBlocks(carriers []registry.Carrier) string {
	var b strings.Builder
	for _, c := range carriers {
		if len(c.Declares) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n# %s, instead of Twilio or beside it: the account's settings from %s.\n", c.Title, c.Numbers.Console)
		for _, d := range c.Declares {
			if d.Default == "" {
				fmt.Fprintf(&b, "%s=\n", d.Env)
			}
		}
		for _, d := range c.Declares {
			if d.Default != "" {
				fmt.Fprintf(&b, "# %s=%s\n", d.Env, d.Default)
			}
		}
	}
	return b.String()
}
