package call

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/voice"
)

// TestPlayoutTellsTheFillerFromTheReply: in a turn the filler begins, the playout reports
// the filler's first frame as the turn's first audio and, separately, the reply's first
// frame when it is sent, never pairing the two in one message.
func TestPlayoutTellsTheFillerFromTheReply(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	leg := newTestLeg(clk, playNever)
	type start struct {
		turn  int
		start audioStart
		sent  int // audio frames sent by then
	}
	var mu sync.Mutex
	var starts []start
	p := newPlayout(leg, clk, 80*time.Millisecond, 150*time.Millisecond, func(turn int, s audioStart) {
		mu.Lock()
		starts = append(starts, start{turn, s, leg.count("audio")})
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	p.enqueueAudio(1, frames(3), "t1-s1", true) // an odd count: its last frame would pair with the reply's first
	p.enqueueAudio(1, frames(4), "t1-s2", false)
	p.enqueue(2, frames(2), "t2-s1")
	for range 40 {
		waitIdle(t, clk, p)
		if leg.count("audio") == 9 {
			break
		}
		clk.Advance(20 * time.Millisecond)
	}
	mu.Lock()
	got := slices.Clone(starts)
	mu.Unlock()
	// Two frames a message: the filler's first two, its third alone, then the reply's.
	want := []start{{1, audioFiller, 2}, {1, audioAfterFiller, 5}, {2, audioReply, 9}}
	if !slices.Equal(got, want) {
		t.Errorf("audio starts %+v, want %+v (turn, start, frames sent by then)", got, want)
	}
}

// TestFillerTurnLatencyIsTheReplys: a slow turn hears the filler after
// HANDSET_LONG_TURN_AFTER; the caller's wait for the answer (response_ms) runs on to the
// reply's own first audio, and filler_ms says when the filler started.
func TestFillerTurnLatencyIsTheReplys(t *testing.T) {
	clk := clock.NewFake(t0)
	results := make(chan voice.Transcript, 4)
	agent := newPushAgent()
	leg := newTestLeg(clk, playNever)
	cfg := DefaultConfig()
	cfg.Turn.LongTurnMessage = "One moment."
	cfg.Turn.LongTurnAfter = 4 * time.Second
	r := startRig(t, clk, cfg, Deps{Leg: leg, STT: &scriptedSTT{results: results}, TTS: quickTTS{}, Agent: agent})
	c, watch := r.c, r.watch

	results <- voice.Transcript{Text: "what is my balance", Final: true}
	// The engine takes transcripts in order: once the partial after the final is journaled,
	// the final's turn was dispatched and its filler timer armed.
	results <- voice.Transcript{Text: "um"}
	watch.wait(t, "stt.partial", func(e obs.Event) bool { return e.Type == obs.STTPartial })
	clk.Advance(4 * time.Second) // the filler's timer
	watch.wait(t, "the filler on the wire", func(e obs.Event) bool { return e.Type == obs.PlayoutFirstAudio && e.Turn == 1 })
	clk.Advance(2 * time.Second) // the agent is still thinking
	agent.say("Your balance is forty dollars.")
	close(agent.chunks)
	watch.wait(t, "agent.done", func(e obs.Event) bool { return e.Type == obs.AgentDone })
	// The reply's audio follows what is left of the filler's, 20 ms a frame.
	deadline := time.Now().Add(30 * time.Second) // a safety net: the loop ends on the mark
	for !leg.sentMark("t1-end") {
		if time.Now().After(deadline) {
			t.Fatalf("the turn never finished playing: %+v", watch.all())
		}
		waitIdle(t, clk, c.playout)
		clk.Advance(20 * time.Millisecond)
	}
	// The owner journals the reply's first audio as the playout reports it, not as it sends.
	watch.wait(t, "the reply's first audio", func(e obs.Event) bool { return e.Type == obs.PlayoutReplyAudio })
	turns := obs.Turns(watch.all())
	if len(turns) != 1 {
		t.Fatalf("turns %+v", turns)
	}
	got := turns[0]
	if got.FillerMS != 4000 {
		t.Errorf("filler_ms %v, want 4000 (HANDSET_LONG_TURN_AFTER after the final)", got.FillerMS)
	}
	if got.ResponseMS < 6000 {
		t.Errorf("response_ms %v, want at least 6000: the reply's first audio came after the agent's 6 s, not with the filler", got.ResponseMS)
	}
}

// waitIdle waits until the playout goroutine is parked with nothing it could do before the
// clock moves: no wake-up sent, and either its timer not yet due or nothing queued.
func waitIdle(t *testing.T, clk *clock.Fake, p *playout) {
	t.Helper()
	waitUntil(t, func() bool {
		p.mu.Lock()
		empty := p.queue.len() == 0 && !p.clearing
		p.mu.Unlock()
		until := p.parkedUntil.Load()
		return p.parked.Load() && len(p.wake) == 0 && (until == 0 && empty || until > clk.Now().UnixNano())
	})
}

// fillerConfig speaks "One moment." when a turn has had no audio for 4 s.
func fillerConfig() Config {
	cfg := testConfig()
	cfg.Turn.LongTurnMessage = "One moment."
	cfg.Turn.LongTurnAfter = 4 * time.Second
	return cfg
}

func isFiller(e obs.Event) bool { return e.Kind == "filler" }

// TestFillerOnlyForASlowRun: a run that answers within LongTurnAfter hears no filler; a
// slow one hears it exactly then, and the reply after it. The filler is no words of the
// agent's: not in the transcript, not in the next turn's history.
func TestFillerOnlyForASlowRun(t *testing.T) {
	t.Run("fast", func(t *testing.T) {
		r, agent, _, results := replyRig(t, fillerConfig())
		askHours(r, agent, results)
		r.tick(time.Second)
		agent.say("We open at nine.")
		close(agent.chunks)
		r.await(obs.TTSRequest, withText("We open at nine."))
		r.playOut(1)
		r.tick(5 * time.Second)
		if r.has(obs.TTSRequest, isFiller) || r.has(turn.NoteFiller, nil) {
			t.Errorf("a fast run heard the filler:\n%s", r.journal())
		}
	})
	t.Run("slow", func(t *testing.T) {
		r, agent, tts, results := replyRig(t, fillerConfig())
		askHours(r, agent, results)
		r.tick(4 * time.Second)
		if got := r.await(obs.TTSRequest, isFiller); got.MS != 4000 || got.Text != "One moment." {
			t.Errorf("filler %q asked for at %d ms, want \"One moment.\" at 4000", got.Text, got.MS)
		}
		r.await(obs.PlayoutFirstAudio, isFiller)
		r.tick(time.Second)
		agent.say("We open at nine.")
		close(agent.chunks)
		r.await(obs.TTSRequest, withText("We open at nine."))
		r.playOut(1)
		if n := tts.count("One moment."); n != 1 {
			t.Errorf("filler synthesised %d times, want once", n)
		}
		for _, l := range r.transcript() {
			if l.Role == voice.RoleAssistant && l.Text != "We open at nine." {
				t.Errorf("agent's transcript line %q, want only the reply", l.Text)
			}
		}
		results <- voice.Transcript{Text: "thanks", Final: true}
		r.until("turn 2 reaches the agent", false, func() bool { return len(agent.requests()) == 2 })
		want := []string{"user: what are your hours", "assistant: We open at nine.", "user: thanks"}
		if got := contents(agent.requests()[1].History); !reflect.DeepEqual(got, want) {
			t.Errorf("turn 2's history %q, want %q", got, want)
		}
	})
}

// TestNoFillerOnceTheReplyBegan: a tool starting after the reply's first sentence, or the
// filler's time passing, says nothing over the reply.
func TestNoFillerOnceTheReplyBegan(t *testing.T) {
	r, agent, tts, results := replyRig(t, fillerConfig())
	askHours(r, agent, results)
	r.tick(time.Second)
	agent.say("Let me look. ")
	r.await(obs.TTSRequest, withText("Let me look."))
	agent.chunks <- voice.ReplyChunk{Progress: "search_hours"}
	r.await(obs.AgentProgress, nil)
	r.tick(5 * time.Second)
	if r.has(obs.TTSRequest, isFiller) || tts.count("One moment.") != 0 {
		t.Errorf("the filler was spoken after the reply began:\n%s", r.journal())
	}
}

// TestFinalAsTheFillerStartsIsHeard: the caller adds to what they said while the run is
// slow; STT's final comes just after the filler reached the wire, inside the barge-in gate.
// The words are a turn: the slow run gives way to one that has both sentences, and the
// filler is cleared from the line. (They were dropped, and the caller went unheard.)
func TestFinalAsTheFillerStartsIsHeard(t *testing.T) {
	r, agent, _, results := replyRig(t, fillerConfig())
	askHours(r, agent, results)
	r.tick(4 * time.Second)
	r.await(obs.PlayoutFirstAudio, isFiller)
	results <- voice.Transcript{Text: "on sunday", Final: true}
	r.await(obs.STTFinal, withText("on sunday"))
	r.sync() // the owner has stepped the turn machine with it
	if !r.has(obs.TurnCommit, withText("on sunday")) {
		t.Fatalf("the caller's words were dropped:\n%s", r.journal())
	}
	r.until("turn 2 reaches the agent", false, func() bool { return len(agent.requests()) == 2 })
	want := []string{"user: what are your hours", "user: on sunday"}
	if got := contents(agent.requests()[1].History); !reflect.DeepEqual(got, want) {
		t.Errorf("turn 2's history %q, want %q", got, want)
	}
	if err := agent.contexts()[0].Err(); err == nil {
		t.Error("the slow run was not cancelled")
	}
	r.until("the filler is cleared", false, func() bool { return r.leg.count("clear") == 1 })
	if r.has(obs.TurnInterrupted, nil) {
		t.Errorf("nothing of the agent's was heard, yet a turn was interrupted:\n%s", r.journal())
	}
}
