package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/handset-voice/handset/internal/registry"
)

// TestUnknownNamesWarn: a HANDSET_* name that is not a setting, in the environment, a dotenv
// file or the YAML file, is a warning naming the closest setting; Load still succeeds and the
// rest of the settings apply.
func TestUnknownNamesWarn(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		".env": "HANDSET_BROWSR=true\nHANDSET_AGENT=echo\nUNRELATED_TOOL=x\n",
		"handset.yaml": yamlLines(
			"agent:",
			"  urll: http://x",
			"sst:",
			"  provider: sphinx",
			"HANDSET_TTS: flite",
			"colour: blue",
		),
	})
	c, err := Load(LoadOptions{WorkDir: dir, Environ: []string{
		"HANDSET_SST=deepgram",
		"HANDSET_STT=sphinx",
		"handset_tts=flite",              // the right name in the wrong case
		"HANDSET_OPENAI_API_KEY=sk-x",    // a setting's name with HANDSET_ in front
		"HANDSET_STT_PROVIDER=sphinx",    // the YAML path spelled as a variable
		"HANDSET_FROBNICATE=1",           // nothing close
		"HANDSET_TEST_DATABASE_URL=x",    // the repository's own test settings
		"HANDSET_SPEECH_DIR=/tmp",        // and scripts
		"PATH=/bin", "HOME=/root", "X=1", // other programs' variables are never looked at
	}})
	if err != nil {
		t.Fatalf("unknown names must not be fatal: %v", err)
	}
	if c.Agent.Runtime != AgentEcho || c.STT.Provider != STTSphinx {
		t.Errorf("the known settings did not apply: agent %q, stt %q", c.Agent.Runtime, c.STT.Provider)
	}
	yamlFile, envFile := dir+"/handset.yaml", dir+"/.env"
	var got []string
	for _, w := range c.Warnings() {
		got = append(got, w.String())
	}
	want := []string{
		"agent.urll is not a Handset setting; did you mean agent.url? (from config file " + yamlFile + ":2)",
		"sst is not a Handset setting; did you mean stt? (from config file " + yamlFile + ":3)",
		"HANDSET_TTS is not a Handset setting; did you mean tts.provider? (from config file " + yamlFile + ":5)",
		"colour is not a Handset setting; it is ignored (from config file " + yamlFile + ":6)",
		"HANDSET_BROWSR is not a Handset setting; did you mean HANDSET_BROWSER? (from env file " + envFile + ":1)",
		"HANDSET_FROBNICATE is not a Handset setting; it is ignored (from environment)",
		"HANDSET_OPENAI_API_KEY is not a Handset setting; did you mean OPENAI_API_KEY? (from environment)",
		"HANDSET_SST is not a Handset setting; did you mean HANDSET_STT? (from environment)",
		"HANDSET_STT_PROVIDER is not a Handset setting; did you mean HANDSET_STT? (from environment)",
		"handset_tts is not a Handset setting; did you mean HANDSET_TTS? (from environment)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if w := c.Warnings()[0]; w.Name != "agent.urll" || w.Suggest != "agent.url" || w.Origin.Line != 2 {
		t.Errorf("structured warning: %+v", w)
	}
	if Default().Warnings() != nil {
		t.Error("Default() has warnings")
	}
}

// TestWarningsNeverQuoteValues: a warning names the key, never its value, which may be a secret.
func TestWarningsNeverQuoteValues(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		".env":         "HANDSET_AGENT_KYE=LEAKED\n",
		"handset.yaml": "agent:\n  kye: LEAKED\n",
	})
	c := mustLoad(t, LoadOptions{WorkDir: dir, Environ: []string{"HANDSET_DEEPGRAM_KEY=LEAKED"}})
	if len(c.Warnings()) != 3 {
		t.Fatalf("want 3 warnings, got %v", c.Warnings())
	}
	for _, w := range c.Warnings() {
		if strings.Contains(w.String(), "LEAKED") {
			t.Errorf("a warning quotes a value: %s", w)
		}
	}
}

// TestDottedKnownKeyStaysAnError: `agent.url:` at the top level is a known setting written
// the wrong way, not an unknown name: still an error, with the fix.
func TestDottedKnownKeyStaysAnError(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handset.yaml": "agent.url: http://x\nagent.urll: http://x\n"})
	c, err := Load(LoadOptions{WorkDir: dir})
	if err == nil || !strings.Contains(err.Error(), `handset.yaml:1: unknown key "agent.url": write dotted names nested`) {
		t.Fatalf("want the dotted-key error, got %v", err)
	}
	if c != nil {
		t.Error("Load returned a Config with an error")
	}
}

// TestChoiceSuggestion: a mistyped choice names the value it most likely meant.
func TestChoiceSuggestion(t *testing.T) {
	for _, tt := range []struct{ env, value, want string }{
		{"HANDSET_STT", "deepgrm", "deepgram"},
		{"HANDSET_STT", "Deepgramm", "deepgram"},
		{"HANDSET_VAD", "webrtcc", "webrtc"},
		{"HANDSET_VAD", "silreo", "silero"}, // two neighbours swapped: one edit
		{"HANDSET_STT", "pocketsphinx", "sphinx"},
		{"HANDSET_LOG_LEVEL", "warning", "warn"},
		{"HANDSET_AGENT", "hermes-agent", "hermes"},
		{"HANDSET_TTS", "polly", ""},
		{"HANDSET_VAD", "zz", ""},
	} {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{tt.env + "=" + tt.value}})
		fe := errorFor(t, c.Validate(ValidateOptions{}), tt.env)
		if fe.Suggest != tt.want {
			t.Errorf("%s=%s: suggests %q, want %q", tt.env, tt.value, fe.Suggest, tt.want)
		}
		if hint := "(did you mean " + tt.want + "?)"; (tt.want != "") != strings.Contains(fe.Reason, hint) {
			t.Errorf("%s=%s: reason %q (want the hint %v)", tt.env, tt.value, fe.Reason, tt.want != "")
		}
	}
}

// TestRequireSpeech: serve's check reports the agent, STT and TTS missing all at once.
func TestRequireSpeech(t *testing.T) {
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir()})
	err := c.Validate(ValidateOptions{RequireAgent: true, RequireSpeech: true, RequireKeys: true})
	var got []string
	for _, fe := range fieldErrors(t, err) {
		got = append(got, fe.Error())
	}
	want := []string{
		"HANDSET_AGENT (agent.runtime): is required: set it to the agent runtime that answers calls, one of " + registryNames(registry.KindAgent),
		"HANDSET_STT (stt.provider): is required: set it to the speech-to-text provider, one of " + registryNames(registry.KindSTT),
		"HANDSET_TTS (tts.provider): is required: set it to the text-to-speech provider, one of " + registryNames(registry.KindTTS),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := c.Validate(ValidateOptions{RequireAgent: true}); len(fieldErrors(t, err)) != 1 {
		t.Errorf("without RequireSpeech: %v", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3},
		{"SST", "STT", 1}, {"BROWSR", "BROWSER", 1}, {"silreo", "silero", 1},
		{"kitten", "sitting", 3}, {"ca", "abc", 3}, {"héllo", "hello", 1},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
