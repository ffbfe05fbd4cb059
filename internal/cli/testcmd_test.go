package cli

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/testpeer"
)

// TestTestCommand: `handset test` runs one real turn, speaks a phrase with the TTS and
// hears it with the STT; each broken stage fails the command, names the stage and says
// what to check, without printing a key.
func TestTestCommand(t *testing.T) {
	testpeer.Slow(t, "runs `handset test` once per broken stage")
	_, env := withFakes(t, []string{"testing one two three"})
	code, out := runCmd(t, env, "test")
	if code != 0 {
		t.Fatalf("healthy: exit %d\n%s", code, out)
	}
	for _, want := range []string{"ok   agent openai", "ok   tts   elevenlabs", `ok   stt   deepgram`, `heard "testing one two three"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	_, js := runCmd(t, env, "test", "--json")
	var results []probeResult
	if err := json.Unmarshal([]byte(js), &results); err != nil || len(results) != 3 {
		t.Fatalf("--json: %v\n%s", err, js)
	}
	if r := results[0]; !r.OK || r.FirstMS <= 0 || r.TotalMS < r.FirstMS || r.Result == "" {
		t.Errorf("agent result %+v", r)
	}

	for _, tc := range []struct{ name, env, stage, fix string }{
		{"agent key", "HANDSET_AGENT_KEY=wrong", "FAIL agent", "HANDSET_AGENT_KEY"},
		{"tts key", "ELEVENLABS_API_KEY=wrong", "FAIL tts", "ELEVENLABS_API_KEY"},
		{"stt key", "DEEPGRAM_API_KEY=wrong", "FAIL stt", "DEEPGRAM_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runCmd(t, override(env, []string{tc.env}), "test")
			if code != 1 || !strings.Contains(out, tc.stage) || !strings.Contains(out, tc.fix) {
				t.Errorf("exit %d, want 1 naming %q with %q:\n%s", code, tc.stage, tc.fix, out)
			}
			if strings.Contains(out, "wrong") {
				t.Error("a key was printed")
			}
		})
	}
}

// TestTestCommandSendsTheCallSession: the test turn reaches Hermes with the session a call
// from that caller would have: the caller-hash session key, never the number.
func TestTestCommandSendsTheCallSession(t *testing.T) {
	h := fakehermes.New(fakehermes.Options{Key: "hermes-key"})
	srv := httptest.NewServer(h)
	defer srv.Close()
	_, env := withFakes(t, []string{"testing one two three"}, "HANDSET_AGENT=hermes", "HANDSET_AGENT_URL="+srv.URL+"/v1",
		"HANDSET_AGENT_KEY=hermes-key", "HANDSET_SESSION_KEY_FROM=caller_hash", "HANDSET_CALLER_HASH_SECRET=0123456789abcdef0123456789abcdef")
	code, out := runCmd(t, env, "test", "--caller", "+1 555 010 0042")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	want := session.CallerHash([]byte("0123456789abcdef0123456789abcdef"), "+15550100042")
	reqs := h.Requests()
	if len(reqs) == 0 {
		t.Fatal("Hermes got no request")
	}
	last := reqs[len(reqs)-1]
	if got := last.Header.Get("X-Hermes-Session-Key"); !strings.Contains(got, want) {
		t.Errorf("session key header %q, want the caller hash %s", got, want)
	}
	if strings.Contains(strings.Join(last.Header.Values("X-Hermes-Session-Key"), ""), "555") {
		t.Error("the number reached Hermes")
	}
}
