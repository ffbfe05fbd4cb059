package gateway

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// observedLeg is a media leg that runs until the test hangs up and hands every journal
// event of its call to seen (the gateway tees a leg that observes).
type observedLeg struct {
	id     voice.CallID
	hangup chan struct{}
	seen   *journalEvents
}

func (l observedLeg) Info() voice.LegInfo {
	return voice.LegInfo{CallID: l.id, Carrier: "twilio", Direction: voice.Inbound, Format: audio.Telephone}
}
func (l observedLeg) Run(ctx context.Context, sink voice.LegSink) error {
	silence := make([]byte, audio.Telephone.FrameBytes())
	for range 10 {
		sink.Audio(silence) // a carrier that sends no audio is a broken carrier stage
	}
	select {
	case <-l.hangup:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (observedLeg) SendAudio(context.Context, []byte) error { return nil }
func (observedLeg) SendMark(context.Context, string) error  { return nil }
func (observedLeg) Clear(context.Context) error             { return nil }
func (l observedLeg) Observe(e obs.Event)                   { l.seen.add(e) }

// TestCallSummaryKept: when a call ends, its store record carries what its journal says:
// its caller turns, and for a call whose agent failed, the broken stage "agent".
func TestCallSummaryKept(t *testing.T) {
	cases := []struct {
		name, say string
		until     string // the journal event after which the caller hangs up
		stage     string // want; "" for any
	}{
		{name: "answered", say: "what time do you open", until: obs.AgentDone},
		{name: "agent fails", say: fakeopenai.MagicFail500 + " what time do you open", until: obs.AgentError, stage: "agent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			agentFake := fakeopenai.New(fakeopenai.Options{Key: "agent-key"})
			agentSrv := httptest.NewServer(agentFake)
			t.Cleanup(func() { agentFake.Close(); agentSrv.Close() })
			cfg, err := config.Load(config.LoadOptions{WorkDir: t.TempDir(), Environ: []string{
				"HANDSET_DATA_DIR=" + t.TempDir(),
				"HANDSET_AGENT=openai", "HANDSET_AGENT_URL=" + agentSrv.URL + "/v1", "HANDSET_AGENT_KEY=agent-key",
			}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a safety net
			defer cancel()
			st, err := OpenStore(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			agent, err := BuildAgent(cfg, quiet)
			if err != nil {
				t.Fatal(err)
			}
			results := make(chan voice.Transcript, 1)
			s, err := newServer(ctx, cfg, providers{
				agent: agent, stt: pushSTT{results: results}, tts: silentTTS{},
				newVAD: func(rate int) (vad.Detector, error) { return vad.NewEnergy(vad.EnergyConfig{Rate: rate}) },
			}, st, quiet, serverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.stopCalls(); s.lines.Close() })

			leg := observedLeg{id: voice.CallID("c_summary_" + tc.name[:5]), hangup: make(chan struct{}),
				seen: &journalEvents{changed: make(chan struct{})}}
			done, err := s.admit(leg)
			if err != nil {
				t.Fatal(err)
			}
			results <- voice.Transcript{Text: tc.say, Final: true}
			leg.seen.wait(t, tc.until, func(e obs.Event) bool { return e.Type == tc.until })
			close(leg.hangup)
			<-done
			var got store.Call
			err = poll(ctx, func() bool {
				got, err = st.Call(ctx, leg.id)
				return err == nil && got.Summary.Turns > 0
			})
			if err != nil {
				t.Fatalf("the call's record has no summary: %+v", got)
			}
			if got.Summary.Turns != 1 || got.Summary.Interrupted != 0 {
				t.Errorf("summary %+v, want 1 turn, none cut short", got.Summary)
			}
			if tc.stage != "" && (got.Summary.Stage != tc.stage || got.Summary.Problem == "") {
				t.Errorf("summary %+v, want the broken stage %q with its problem", got.Summary, tc.stage)
			}
			if got.Outcome == "" || got.EndedAt.IsZero() {
				t.Errorf("the call's record has no end: %+v", got)
			}
		})
	}
}
