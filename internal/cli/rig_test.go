package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/engines"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is `handset serve` running in-process against fake Deepgram, ElevenLabs and
// OpenAI-compatible servers that speak the vendors' wire protocols.
type rig struct {
	t       *testing.T
	addr    string
	token   string
	dataDir string
	stt     *fakedeepgram.Server
	tts     *fakeelevenlabs.Server
	agent   *fakeopenai.Server
	logs    *syncBuffer
	environ []string // the settings serve runs with
	// kit and vendor are the carrier's fake when the rig was started by startServeWith.
	kit    simkit.Kit
	vendor simkit.Vendor
}

const greeting = "Hello, this is Handset."

// withFakes starts fake Deepgram, ElevenLabs and OpenAI-compatible servers and returns the
// settings that point Handset at them (extra overrides them); the fakes stop with the test.
func withFakes(t *testing.T, transcripts []string, extra ...string) (*rig, []string) {
	t.Helper()
	r := &rig{
		t: t, token: "test-auth-token", dataDir: t.TempDir(), logs: &syncBuffer{},
		stt:   fakedeepgram.New(fakedeepgram.Options{Key: "dg-key", Transcripts: transcripts}),
		tts:   fakeelevenlabs.New(fakeelevenlabs.Options{Key: "el-key", MsPerChar: 20}),
		agent: fakeopenai.New(fakeopenai.Options{Key: "agent-key"}),
	}
	sttSrv, ttsSrv, agentSrv := httptest.NewServer(r.stt), httptest.NewServer(r.tts), httptest.NewServer(r.agent)
	env := []string{
		"HANDSET_LISTEN=127.0.0.1:0",
		"HANDSET_DATA_DIR=" + r.dataDir,
		"HANDSET_AGENT=openai",
		"HANDSET_AGENT_URL=" + agentSrv.URL + "/v1",
		"HANDSET_AGENT_KEY=agent-key",
		"HANDSET_AGENT_MODEL=test-model",
		"HANDSET_STT=deepgram",
		"DEEPGRAM_API_KEY=dg-key",
		"HANDSET_DEEPGRAM_URL=" + sttSrv.URL,
		"HANDSET_TTS=elevenlabs",
		"ELEVENLABS_API_KEY=el-key",
		"HANDSET_ELEVENLABS_URL=" + ttsSrv.URL,
		"TWILIO_AUTH_TOKEN=" + r.token,
		"TWILIO_ACCOUNT_SID=AC00000000000000000000000000000000",
		"HANDSET_FIRST_MESSAGE=" + greeting,
		"HANDSET_ERROR_MESSAGE=Sorry, something went wrong.",
	}
	env = override(env, extra)
	t.Cleanup(func() {
		r.agent.Close()
		r.stt.Close()
		agentSrv.Close()
		sttSrv.Close()
		ttsSrv.Close()
	})
	return r, env
}

// startServe runs serve with the caller's scripted transcripts; extra adds settings.
func startServe(t *testing.T, transcripts []string, extra ...string) *rig {
	t.Helper()
	r, env := withFakes(t, transcripts, extra...)
	r.environ = env
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"serve"}, Env{
			Stdout: r.logs, Stderr: r.logs, Environ: env, WorkDir: t.TempDir(),
			Ready: func(addr string) { ready <- addr },
		})
	}()
	select {
	case r.addr = <-ready:
	case code := <-exited:
		cancel()
		t.Fatalf("serve exited with %d before listening:\n%s", code, r.logs.String())
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("serve did not start")
	}
	t.Cleanup(func() {
		cancel()
		if code := <-exited; code != 0 {
			t.Errorf("serve exited with %d:\n%s", code, r.logs.String())
		}
	})
	return r
}

func (r *rig) baseURL() string { return "http://" + r.addr }

// dial places a call as Twilio would; opts adjust the caller.
func (r *rig) dial(ctx context.Context, opts ...func(*twiliocaller.Options)) *twiliocaller.Call {
	r.t.Helper()
	o := twiliocaller.Options{BaseURL: r.baseURL(), AuthToken: r.token, InsecureStreamURL: true}
	for _, f := range opts {
		f(&o)
	}
	c, err := twiliocaller.Dial(ctx, o)
	if err != nil {
		r.t.Fatalf("dial: %v\n%s", err, r.logs.String())
	}
	return c
}

// journal returns the events of the only call so far, once it has ended.
func (r *rig) journal() []obs.Event {
	r.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*", "events.jsonl"))
	if len(paths) != 1 {
		r.t.Fatalf("want one call journal, found %d", len(paths))
	}
	return r.journalAt(paths[0])
}

// journalOf returns the events of call id, once it has ended.
func journalOf(t *testing.T, r *rig, id string) []obs.Event {
	t.Helper()
	return r.journalAt(filepath.Join(r.dataDir, "calls", id, "events.jsonl"))
}

func (r *rig) journalAt(path string) []obs.Event {
	r.t.Helper()
	paths := []string{path}
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, err := obs.ReadFile(paths[0])
		if err != nil {
			r.t.Fatal(err)
		}
		if n := len(events); n > 0 && events[n-1].Type == obs.CallEnd {
			return events
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the call never ended; journal:\n%s", dumpEvents(events))
		}
		time.Sleep(20 * time.Millisecond) // the call finishes on its own goroutine after hang-up
	}
}

// repoEngines is the directory holding the engine files (.cache/engines at the module
// root, where scripts/engines.sh puts them); without them it is a missing peer.
func repoEngines(t *testing.T) string {
	t.Helper()
	return filepath.Dir(vadtest.EngineFile(t, engines.FVADFile))
}

// speech is caller audio: speech-like sound for d, as 8 kHz mu-law.
func speech(d time.Duration, seed int64) []byte {
	return audiotest.Mulaw(audiotest.SpeechLike(8000, d, seed))
}

// waitMark waits until the carrier echoed a mark with this name (played, not cleared).
func waitMark(ctx context.Context, t *testing.T, c phone.Phone, name string) {
	t.Helper()
	waitMarkFor(ctx, t, c, name, 20*time.Second)
}

// waitMarkFor is waitMark with a deadline of its own (real runtimes are slower).
func waitMarkFor(ctx context.Context, t *testing.T, c phone.Phone, name string, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := c.WaitFor(ctx, func(s phone.Snapshot) bool {
		for _, m := range s.Marks() {
			if m.Name == name && m.Echoed && !m.Cleared {
				return true
			}
		}
		return s.Ended
	})
	if err != nil || !hasPlayedMark(c.Snapshot(), name) {
		t.Fatalf("mark %s never played (err %v); timeline:\n%s", name, err, dumpCaller(c))
	}
}

func hasPlayedMark(s phone.Snapshot, name string) bool {
	for _, m := range s.Marks() {
		if m.Name == name && m.Echoed && !m.Cleared {
			return true
		}
	}
	return false
}

func dumpCaller(c phone.Phone) string {
	var b strings.Builder
	for _, e := range c.Events() {
		if e.Kind == phone.AudioReceived || e.Kind == phone.AudioPlayed {
			continue
		}
		fmt.Fprintln(&b, e.String())
	}
	return b.String()
}

func dumpEvents(events []obs.Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%6d %-20s turn=%d %s %s %s", e.MS, e.Type, e.Turn, e.Text, e.Kind, e.Message)
		// What the echo handling and the VAD decided on, for barge-in failures.
		if e.Name != "" || e.DelayMS != 0 || e.ReturnLossDB != 0 {
			fmt.Fprintf(&b, " name=%s delay=%.0fms loss=%.1fdB cancelled=%.1fdB", e.Name, e.DelayMS, e.ReturnLossDB, e.CancelledDB)
		}
		if e.Reason != "" {
			fmt.Fprintf(&b, " reason=%s", e.Reason)
		}
		if e.Count != 0 || e.AudioMS != 0 || e.LevelDB != 0 {
			fmt.Fprintf(&b, " count=%d audio_ms=%d level=%.1fdB", e.Count, e.AudioMS, e.LevelDB)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// eventsOf returns the events of type typ, in order.
func eventsOf(events []obs.Event, typ string) []obs.Event {
	var out []obs.Event
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type fakeopenaiMessage = fakeopenai.Message

// override replaces settings in env with those in extra, and adds the rest.
func override(env, extra []string) []string {
	keys := map[string]bool{}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		keys[k] = true
	}
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !keys[k] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
