package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/sim/fakewebhook"
	"github.com/handset-voice/handset/internal/voice"
)

// quietLeg is a media leg that never hangs up and keeps nothing of what is sent.
type quietLeg struct{}

func (quietLeg) Info() voice.LegInfo {
	return voice.LegInfo{CallID: "c_turnlimit", Carrier: "twilio", Direction: voice.Inbound, Format: audio.Telephone}
}
func (quietLeg) Run(ctx context.Context, _ voice.LegSink) error { <-ctx.Done(); return nil }
func (quietLeg) SendAudio(context.Context, []byte) error        { return nil }
func (quietLeg) SendMark(context.Context, string) error         { return nil }
func (quietLeg) Clear(context.Context) error                    { return nil }

// pushSTT recognises whatever a test pushes, and nothing else.
type pushSTT struct{ results chan voice.Transcript }

func (pushSTT) Name() string { return "push" }
func (s pushSTT) Stream(context.Context, audio.Format, voice.StreamOptions) (voice.RecognizerStream, error) {
	return pushStream(s), nil
}

type pushStream struct{ results chan voice.Transcript }

func (pushStream) Write([]byte) error                 { return nil }
func (pushStream) Finalize() error                    { return nil }
func (s pushStream) Results() <-chan voice.Transcript { return s.results }
func (pushStream) Close() error                       { return nil }

// silentTTS speaks every sentence as 200 ms of silence, at once.
type silentTTS struct{}

func (silentTTS) Name() string { return "silent" }
func (silentTTS) Synthesize(context.Context, string, audio.Format) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(make([]byte, 1600))), nil
}

// journalEvents collects a call's events as they are journaled.
type journalEvents struct {
	mu      sync.Mutex
	events  []obs.Event
	changed chan struct{}
}

func (j *journalEvents) add(e obs.Event) {
	j.mu.Lock()
	j.events = append(j.events, e)
	close(j.changed)
	j.changed = make(chan struct{})
	j.mu.Unlock()
}

// wait returns the events so far once one matches, waiting up to a safety deadline.
func (j *journalEvents) wait(t *testing.T, what string, match func(obs.Event) bool) []obs.Event {
	t.Helper()
	deadline := time.After(30 * time.Second) // a safety net: the wait ends on the event
	for {
		j.mu.Lock()
		events, ch := slices.Clone(j.events), j.changed
		j.mu.Unlock()
		if slices.ContainsFunc(events, match) {
			return events
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %s in the journal:\n%+v", what, events[:min(len(events), 40)])
		}
	}
}

// TestAgentTurnTimeoutEveryRuntime: with the default settings, a turn is bounded overall
// for every runtime, whether the runtime stays silent (a hung server) or keeps sending
// events (an OpenClaw run starting tool after tool, a Hermes tool run with keepalives),
// neither of which a silence timeout ends. On the call's (fake) clock, the default filler
// is spoken, then at HANDSET_AGENT_TURN_TIMEOUT the run is aborted on the runtime's side
// and the caller hears the error message.
func TestAgentTurnTimeoutEveryRuntime(t *testing.T) {
	cases := []struct {
		name string
		say  string
		// start runs the fake runtime and returns the settings that reach it, a wait for the
		// runtime to have the turn (so its limit is armed: the engine arms it before it
		// asks), and a wait for the runtime to see the turn's run aborted.
		start func(t *testing.T) (env []string, asked, aborted func(context.Context) error)
		busy  bool // the runtime reports tool progress while it works
	}{
		{name: "openclaw tools forever", say: "TOOLLOOP find my order", busy: true,
			start: func(t *testing.T) ([]string, func(context.Context) error, func(context.Context) error) {
				gw := fakeopenclaw.New(fakeopenclaw.Options{Token: "gw-token", ToolEvery: 20 * time.Millisecond})
				srv := httptest.NewServer(gw)
				t.Cleanup(func() { gw.Close(); srv.Close() })
				return []string{"HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL=" + srv.URL, "HANDSET_AGENT_KEY=gw-token"},
					func(ctx context.Context) error {
						return gw.WaitFor(ctx, func(s *fakeopenclaw.Server) bool { return len(s.Sends()) == 1 })
					},
					func(ctx context.Context) error {
						return gw.WaitFor(ctx, func(s *fakeopenclaw.Server) bool { return len(s.Aborts()) == 1 })
					}
			}},
		{name: "hermes tool with keepalives", say: "TOOLCALL look it up", busy: true,
			start: func(t *testing.T) ([]string, func(context.Context) error, func(context.Context) error) {
				h := fakehermes.New(fakehermes.Options{Key: "hermes-key-0123456789", Keepalive: 20 * time.Millisecond, ToolDuration: time.Hour})
				srv := httptest.NewServer(h)
				t.Cleanup(func() { h.Close(); srv.Close() })
				return []string{"HANDSET_AGENT=hermes", "HANDSET_AGENT_URL=" + srv.URL + "/v1", "HANDSET_AGENT_KEY=hermes-key-0123456789"},
					func(ctx context.Context) error { return poll(ctx, func() bool { return len(h.Runs()) == 1 }) },
					func(ctx context.Context) error { return poll(ctx, func() bool { return h.StopCount() == 1 }) }
			}},
		{name: "openai hangs", say: "HANG on",
			start: func(t *testing.T) ([]string, func(context.Context) error, func(context.Context) error) {
				f := fakeopenai.New(fakeopenai.Options{Key: "agent-key"})
				srv := httptest.NewServer(f)
				t.Cleanup(func() { f.Close(); srv.Close() })
				return []string{"HANDSET_AGENT=openai", "HANDSET_AGENT_URL=" + srv.URL + "/v1", "HANDSET_AGENT_KEY=agent-key"},
					func(ctx context.Context) error { return f.AwaitRequests(ctx, 1) },
					func(ctx context.Context) error { return f.AwaitAborted(ctx, 1) }
			}},
		{name: "webhook hangs", say: "HANG on",
			start: func(t *testing.T) ([]string, func(context.Context) error, func(context.Context) error) {
				f := fakewebhook.New(fakewebhook.Options{})
				srv := httptest.NewServer(f)
				t.Cleanup(func() { f.Close(); srv.Close() })
				return []string{"HANDSET_AGENT=webhook", "HANDSET_AGENT_URL=" + srv.URL + "/turn"},
					func(ctx context.Context) error { return f.AwaitRequests(ctx, 1) },
					func(ctx context.Context) error { return f.AwaitAborted(ctx, 1) }
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, asked, aborted := tc.start(t)
			// A silence limit far beyond the test: only the overall limit can end the turn.
			cfg, err := config.Load(config.LoadOptions{WorkDir: t.TempDir(), Environ: append(env, "HANDSET_AGENT_TIMEOUT=1h")})
			if err != nil {
				t.Fatal(err)
			}
			agent, err := BuildAgent(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := agent.(interface{ Close() error }); ok {
				t.Cleanup(func() { _ = c.Close() })
			}
			clk := clock.NewFake(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			seen := &journalEvents{changed: make(chan struct{})}
			journal := obs.NewWriter(io.Discard, clk.Now())
			journal.Tee(seen.add)
			results := make(chan voice.Transcript, 1)
			c := call.New(context.Background(), callConfig(cfg), call.Deps{
				Leg: quietLeg{}, STT: pushSTT{results: results}, TTS: silentTTS{}, Agent: agent, Clock: clk, Journal: journal,
				NewVAD: func(rate int) (vad.Detector, error) { return vad.NewEnergy(vad.EnergyConfig{Rate: rate}) },
			})
			done := make(chan struct{})
			go func() { c.Run(); close(done) }()
			t.Cleanup(func() { c.Hangup(); <-done })

			results <- voice.Transcript{Text: tc.say, Final: true}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a safety net
			defer cancel()
			if err := asked(ctx); err != nil {
				t.Fatalf("the runtime never got the turn: %v", err)
			}
			// The owner loop takes one input at a time: once it has journaled this partial,
			// it has armed the filler timer of the turn it dispatched before.
			results <- voice.Transcript{Text: "and", Final: false}
			seen.wait(t, "stt.partial", func(e obs.Event) bool { return e.Type == obs.STTPartial })
			if tc.busy {
				seen.wait(t, "agent.progress", func(e obs.Event) bool { return e.Type == obs.AgentProgress })
			}
			clk.Advance(cfg.Agent.TurnTimeout)
			events := seen.wait(t, "the error message", func(e obs.Event) bool {
				return e.Type == obs.TTSRequest && e.Text == cfg.Messages.Error
			})
			var spoken []string
			for _, e := range events {
				switch {
				case e.Type == obs.TTSRequest:
					spoken = append(spoken, e.Text)
				case e.Type == obs.AgentError && e.Kind != "timeout":
					t.Errorf("agent.error %+v, want kind timeout", e)
				}
			}
			if want := []string{"One moment.", cfg.Messages.Error}; !slices.Equal(spoken, want) {
				t.Errorf("the caller heard %q, want %q", spoken, want)
			}
			if err := aborted(ctx); err != nil {
				t.Errorf("the runtime's run was not aborted: %v", err)
			}
		})
	}
}

// poll checks cond every few milliseconds until it holds or ctx ends.
func poll(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
