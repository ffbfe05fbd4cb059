package obs

import (
	"encoding/json"
	"strings"
	"testing"

	_ "github.com/handset-voice/handset/internal/providers" // the hints verdicts give come from the catalogue
)

// want is what a verdict must say: its stage, and words its problem, fix and evidence
// must contain.
type want struct {
	stage    string
	problem  []string
	fix      []string
	evidence []string
}

func checkVerdict(t *testing.T, v Verdict, w want) {
	t.Helper()
	if v.Stage != w.stage {
		t.Fatalf("stage %q, want %q\nproblem: %s\nfix: %s\nevidence: %v\nwarnings: %+v", v.Stage, w.stage, v.Problem, v.Fix, v.Evidence, v.Warnings)
	}
	for _, s := range w.problem {
		if !strings.Contains(v.Problem, s) {
			t.Errorf("problem %q lacks %q", v.Problem, s)
		}
	}
	for _, s := range w.fix {
		if !strings.Contains(v.Fix, s) {
			t.Errorf("fix %q lacks %q", v.Fix, s)
		}
	}
	ev := strings.Join(v.Evidence, "\n")
	for _, s := range w.evidence {
		if !strings.Contains(ev, s) {
			t.Errorf("evidence lacks %q:\n%s", s, ev)
		}
	}
	if w.stage != "" && (v.Fix == "" || len(v.Evidence) == 0) {
		t.Errorf("a broken stage needs a fix and evidence: %+v", v)
	}
}

func TestDiagnoseHealthyCall(t *testing.T) {
	v := Diagnose(healthyCall())
	checkVerdict(t, v, want{stage: "", problem: []string{Healthy}, evidence: []string{"2 of 2 caller turns answered", "call.end caller_hangup"}})
	if len(v.Warnings) != 0 || v.Fix != "" {
		t.Errorf("a healthy call has no warnings or fix: %+v", v)
	}
}

func TestDiagnoseEmptyJournal(t *testing.T) {
	if v := Diagnose(nil); v.Stage != "" || !strings.Contains(v.Problem, "empty") {
		t.Errorf("empty journal: %+v", v)
	}
}

func TestDiagnoseCarrier(t *testing.T) {
	start := startedWith("openai", "deepgram", "elevenlabs")
	t.Run("no media", func(t *testing.T) {
		v := Diagnose([]Event{start, ev(10, TTSRequest), ev(100, TTSFirstByte), ev(110, PlayoutFirstAudio),
			ev(2400, CallEnd, withReason("caller_hangup"))})
		checkVerdict(t, v, want{stage: "carrier", problem: []string{"Twilio connected but sent no audio in 2.4 s"},
			fix: []string{"/twilio/stream", "HANDSET_PUBLIC_URL"}, evidence: []string{"0 ms call.start carrier=twilio", "no media.first_in", "2400 ms call.end caller_hangup"}})
	})
	t.Run("no media beats a failed STT", func(t *testing.T) {
		v := Diagnose([]Event{start, ev(5, STTError, failed("auth", "deepgram: open stream: HTTP 401: bad key (auth)")),
			ev(3000, CallEnd, withReason("caller_hangup"))})
		checkVerdict(t, v, want{stage: "carrier"})
		if !hasWarning(v, "stt", "DEEPGRAM_API_KEY") {
			t.Errorf("the STT failure should still be reported: %+v", v.Warnings)
		}
	})
	t.Run("browser", func(t *testing.T) {
		b := start
		b.Carrier = "browser"
		v := Diagnose([]Event{b, ev(5000, CallEnd, withReason("caller_hangup"))})
		checkVerdict(t, v, want{stage: "carrier", problem: []string{"the browser connected"}, fix: []string{"microphone"}})
	})
	t.Run("media stream broke", func(t *testing.T) {
		events := healthyCall()
		events[len(events)-1].Reason = "media_error"
		checkVerdict(t, Diagnose(events), want{stage: "carrier", problem: []string{"broke at 14.0 s"}, fix: []string{"media leg failed"},
			evidence: []string{"call.end media_error"}})
	})
	t.Run("malformed frames only warn", func(t *testing.T) {
		bad := func(n int) func(*Event) {
			return func(e *Event) { e.Message, e.Count = "twilio: media payload: illegal base64", n }
		}
		events := edit(healthyCall(), nil, ev(500, MediaMalformed, bad(1)), ev(600, MediaMalformed, bad(2)))
		v := Diagnose(events)
		checkVerdict(t, v, want{stage: ""})
		if !hasWarning(v, "carrier", "2 media frames dropped") {
			t.Errorf("warnings %+v", v.Warnings)
		}
		if s := stageOf(Trace(events), StageCarrier); s.Status != StatusWarn || s.Carrier.Malformed != 2 {
			t.Errorf("carrier report %+v", s)
		}
	})
}

func TestDiagnoseVAD(t *testing.T) {
	start := startedWith("openai", "deepgram", "elevenlabs")
	greeting := []Event{start, ev(10, TTSRequest), ev(15, MediaFirstIn), ev(100, TTSFirstByte), ev(110, PlayoutFirstAudio), ev(1500, PlayoutDone)}
	t.Run("never heard speech", func(t *testing.T) {
		v := Diagnose(append(greeting, ev(14015, CallEnd, withReason("caller_hangup"))))
		checkVerdict(t, v, want{stage: "vad", problem: []string{"audio arrived for 14.0 s", "never heard the caller speak"},
			fix: []string{"HANDSET_VAD", "HANDSET_VAD_THRESHOLD"}, evidence: []string{"15 ms media.first_in", "no vad.speech_start"}})
	})
	t.Run("a caller who hangs up at once is not a deaf VAD", func(t *testing.T) {
		v := Diagnose(append(greeting[:3:3], ev(1200, CallEnd, withReason("caller_hangup"))))
		checkVerdict(t, v, want{stage: ""})
		if !hasWarning(v, "vad", "hung up") {
			t.Errorf("warnings %+v", v.Warnings)
		}
	})
	t.Run("gives way to a later recorded error", func(t *testing.T) {
		// The greeting could not be spoken, so the caller heard nothing and said nothing.
		v := Diagnose([]Event{start, ev(10, TTSRequest), ev(15, MediaFirstIn),
			ev(90, TTSError, failed("auth", "elevenlabs: synthesize: HTTP 401: invalid api key (auth)")),
			ev(20000, CallEnd, withReason("caller_hangup"))})
		checkVerdict(t, v, want{stage: "tts", problem: []string{"ELEVENLABS_API_KEY was rejected (HTTP 401)", "the greeting was never spoken"}})
		if !hasWarning(v, "vad", "never heard") {
			t.Errorf("the silent VAD should be a warning: %+v", v.Warnings)
		}
	})
	// Turn 1's reply plays from 3810 to 5320 ms; the caller talks over it at 4200 ms.
	overTalk := ev(4200, STTFinal, withText("hold on a second"))
	suppressed := ev(9205, EchoSuppressed, onTurn(1), func(e *Event) { e.Count, e.LevelDB = 40, -24 })
	t.Run("a caller taken for echo", func(t *testing.T) {
		v := Diagnose(edit(healthyCall(), nil, overTalk, suppressed))
		checkVerdict(t, v, want{stage: "vad", problem: []string{"talked over the agent in turn 1", `"hold on a second"`, "never interrupted it", "800 ms of audio, up to -24 dBFS"},
			fix: []string{"echo.path", "HANDSET_ECHO=off", "HANDSET_ECHO_MAX_DELAY"}, evidence: []string{"4200 ms stt.final", "9205 ms echo.suppressed"}})
	})
	t.Run("echo suppressed while the caller was silent is the line working", func(t *testing.T) {
		checkVerdict(t, Diagnose(edit(healthyCall(), nil, suppressed)), want{stage: ""})
	})
	t.Run("the caller's words were the agent's echo", func(t *testing.T) {
		dropped := ev(4205, noteDropped, withText("echo: hold on a second"))
		checkVerdict(t, Diagnose(edit(healthyCall(), nil, overTalk, dropped, suppressed)), want{stage: ""})
	})
	t.Run("the caller did interrupt", func(t *testing.T) {
		barged := ev(4300, BargeIn, onTurn(1))
		checkVerdict(t, Diagnose(edit(healthyCall(), nil, overTalk, barged, suppressed)), want{stage: ""})
	})
	t.Run("words after the reply ended are the next turn", func(t *testing.T) {
		later := ev(5400, STTFinal, withText("hold on a second"))
		checkVerdict(t, Diagnose(edit(healthyCall(), nil, later, suppressed)), want{stage: ""})
	})
	t.Run("transcripts without VAD events are fine", func(t *testing.T) {
		checkVerdict(t, Diagnose(edit(healthyCall(), []string{VADSpeechStart, VADSpeechEnd})), want{stage: ""})
	})
}

func TestDiagnoseSTTErrorsNameTheProviderSetting(t *testing.T) {
	cases := []struct {
		stt, kind, msg string
		want           want
	}{
		{"deepgram", "auth", "deepgram: open stream: HTTP 401: Invalid credentials. (auth)", want{stage: "stt",
			problem: []string{"DEEPGRAM_API_KEY was rejected (HTTP 401)", "the caller spoke but nothing was transcribed"},
			fix:     []string{"DEEPGRAM_API_KEY", "HANDSET_DEEPGRAM_URL"}, evidence: []string{"stt.error auth: deepgram: open stream: HTTP 401"}}},
		{"deepgram", "bad_input", "deepgram: open stream: HTTP 400: No such model (bad_input)", want{stage: "stt",
			problem: []string{"Deepgram refused the request (HTTP 400)"}, fix: []string{"HANDSET_DEEPGRAM_MODEL", "HANDSET_DEEPGRAM_LANGUAGE"}}},
		{"deepgram", "quota", "deepgram: open stream: HTTP 402 (quota)", want{stage: "stt", problem: []string{"quota"}, fix: []string{"credit"}}},
		{"deepgram", "transient", "deepgram: open stream: HTTP 503 (transient)", want{stage: "stt", fix: []string{"HANDSET_DEEPGRAM_URL is reachable"}}},
		{"deepgram", "protocol", "deepgram: open stream: unexpected answer (protocol)", want{stage: "stt", fix: []string{"HANDSET_DEEPGRAM_URL points at Deepgram"}}},
		{"openai", "auth", "openai: transcribe: HTTP 401 (auth)", want{stage: "stt",
			problem: []string{"OPENAI_API_KEY was rejected"}, fix: []string{"OPENAI_API_KEY", "HANDSET_OPENAI_URL"}}},
		{"openai", "bad_input", "openai: transcribe: HTTP 404 (bad_input)", want{stage: "stt", fix: []string{"HANDSET_OPENAI_STT_MODEL"}}},
		{"sphinx", "unknown", "sphinx: load model: no such folder", want{stage: "stt", problem: []string{"PocketSphinx failed"}}},
		{"sphinx", "bad_input", "sphinx: bad model", want{stage: "stt", fix: []string{"HANDSET_SPHINX_MODEL", "pocketsphinx-en-us"}}},
		{"sphinx", "timeout", "sphinx: no decoder free", want{stage: "stt", fix: []string{"HANDSET_SPHINX_DECODERS"}}},
	}
	for _, tc := range cases {
		t.Run(tc.stt+" "+tc.kind, func(t *testing.T) {
			events := edit(healthyCall(), []string{CallStart, STTFinal, STTPartial, TurnCommit, AgentRequest, AgentFirstToken, AgentDone},
				startedWith("openai", tc.stt, "elevenlabs"), ev(5, STTError, failed(tc.kind, tc.msg)))
			events = dropTurnEvents(events)
			checkVerdict(t, Diagnose(events), tc.want)
		})
	}
}

// dropTurnEvents removes the replies to caller turns (what cannot happen without a turn).
func dropTurnEvents(events []Event) []Event {
	var out []Event
	for _, e := range events {
		if e.Turn == 0 {
			out = append(out, e)
		}
	}
	return out
}

func TestDiagnoseSTTWithoutErrors(t *testing.T) {
	noTurns := func(drop ...string) []Event {
		return dropTurnEvents(edit(healthyCall(), append(drop, TurnCommit, AgentRequest)))
	}
	t.Run("speech but no transcript", func(t *testing.T) {
		checkVerdict(t, Diagnose(noTurns(STTFinal, STTPartial)), want{stage: "stt",
			problem: []string{"the caller spoke (2 times) but Deepgram returned no transcript"},
			fix:     []string{"HANDSET_DEEPGRAM_MODEL"}, evidence: []string{"vad.speech_start", "no stt.final"}})
	})
	t.Run("only partials", func(t *testing.T) {
		checkVerdict(t, Diagnose(noTurns(STTFinal)), want{stage: "stt", problem: []string{"only 2 partials, never a final"}})
	})
	t.Run("caller hung up mid-sentence", func(t *testing.T) {
		events := []Event{startedWith("openai", "deepgram", "elevenlabs"), ev(15, MediaFirstIn), ev(4000, VADSpeechStart),
			ev(4600, VADSpeechEnd), ev(5000, CallEnd, withReason("caller_hangup"))}
		v := Diagnose(events)
		checkVerdict(t, v, want{stage: ""})
		if !hasWarning(v, "stt", "hung up while speaking") {
			t.Errorf("warnings %+v", v.Warnings)
		}
	})
	t.Run("transcripts dropped as echo", func(t *testing.T) {
		events := edit(noTurns(), nil, ev(3210, noteDropped, withText("echo: hello this is handset")),
			ev(9210, noteDropped, withText("echo: what are your opening hours")))
		checkVerdict(t, Diagnose(events), want{stage: "stt", problem: []string{"the filters dropped them (echo: hello this is handset)"},
			fix: []string{"echo"}, evidence: []string{"stt.dropped", "no turn.commit"}})
	})
	t.Run("transcripts never committed", func(t *testing.T) {
		checkVerdict(t, Diagnose(noTurns()), want{stage: "stt", problem: []string{"none became a caller turn"}, fix: []string{"HANDSET_TAIL_GRACE"}})
	})
	t.Run("a stream that recovers only warns", func(t *testing.T) {
		events := edit(healthyCall(), nil, ev(4000, STTError, failed("transient", "deepgram: stream: connection reset (transient)")))
		v := Diagnose(events)
		checkVerdict(t, v, want{stage: ""})
		if !hasWarning(v, "stt", "failed 1 time (transient) but recovered") {
			t.Errorf("warnings %+v", v.Warnings)
		}
	})
	t.Run("a stream that dies for good mid-call", func(t *testing.T) {
		// Turn 1 is heard; the stream fails before turn 2, which is never transcribed.
		events := edit(healthyCall(), nil, ev(7000, STTError, failed("quota", "deepgram: stream: HTTP 429 (quota)")))
		var kept []Event
		for _, e := range events {
			if e.MS < 7000 || e.Turn == 0 && e.Type != STTFinal && e.Type != STTPartial {
				kept = append(kept, e)
			}
		}
		checkVerdict(t, Diagnose(kept), want{stage: "stt",
			problem: []string{"Deepgram refused for quota or rate limit (HTTP 429): speech recognition stopped at 7.0 s and the caller spoke 1 time after it, unheard"},
			fix:     []string{"credit"}, evidence: []string{"7000 ms stt.error quota", "no stt.final after 7.0 s"}})
	})
	t.Run("cancellations are not failures", func(t *testing.T) {
		events := edit(healthyCall(), nil, ev(4000, STTError, failed("canceled", "context canceled")))
		if v := Diagnose(events); v.Stage != "" || len(v.Warnings) != 0 {
			t.Errorf("a cancellation was taken for a failure: %+v", v)
		}
	})
}

func TestDiagnoseAgentErrorsByKindAndRuntime(t *testing.T) {
	cases := []struct {
		agent, kind, msg string
		want             want
	}{
		{"openai", "auth", "openai: chat: HTTP 401: Incorrect API key provided (auth)", want{stage: "agent",
			problem: []string{"HANDSET_AGENT_KEY was rejected (HTTP 401)", "2 of 2 caller turns failed (Handset spoke HANDSET_ERROR_MESSAGE instead)"}, fix: []string{"HANDSET_AGENT_KEY", "OPENAI_API_KEY"},
			evidence: []string{"agent.error turn 1 auth: openai: chat: HTTP 401"}}},
		{"hermes", "auth", "hermes: runs: HTTP 401 (auth)", want{stage: "agent", fix: []string{"API_SERVER_KEY", "~/.hermes/.env"}}},
		{"openclaw", "auth", "openclaw: connect: unauthorized (auth)", want{stage: "agent", fix: []string{"OPENCLAW_GATEWAY_TOKEN"}}},
		{"webhook", "auth", "webhook: HTTP 403 (auth)", want{stage: "agent", problem: []string{"(HTTP 403)"}, fix: []string{"bearer token your webhook expects"}}},
		{"openai", "timeout", "openai: chat: no answer in 60s", want{stage: "agent", problem: []string{"did not answer in time"}, fix: []string{"HANDSET_AGENT_TIMEOUT"}}},
		{"hermes", "timeout", "hermes: runs: no event in 60s", want{stage: "agent", fix: []string{"hermes gateway", "HANDSET_AGENT_TIMEOUT"}}},
		{"openai", "transient", "openai: chat: HTTP 500: server_error (transient)", want{stage: "agent",
			problem: []string{"server or network error (HTTP 500)"}, fix: []string{"HANDSET_AGENT_URL is reachable"}}},
		{"openai", "bad_input", "openai: chat: HTTP 404: model not found (bad_input)", want{stage: "agent", fix: []string{"HANDSET_AGENT_MODEL"}}},
		{"openclaw", "bad_input", "openclaw: unknown agent (bad_input)", want{stage: "agent", fix: []string{"openclaw/<agent id>"}}},
		{"webhook", "bad_input", "webhook: HTTP 422 (bad_input)", want{stage: "agent", fix: []string{"docs/runtimes.md"}}},
		{"openai", "quota", "openai: chat: HTTP 429 (quota)", want{stage: "agent", problem: []string{"quota"}, fix: []string{"HANDSET_MAX_CALLS"}}},
		{"openai", "protocol", "openai: chat: not an event stream (protocol)", want{stage: "agent", fix: []string{"HANDSET_AGENT_URL points at"}}},
	}
	for _, tc := range cases {
		t.Run(tc.agent+" "+tc.kind, func(t *testing.T) {
			events := edit(healthyCall(), []string{CallStart, AgentFirstToken, AgentDone},
				startedWith(tc.agent, "deepgram", "elevenlabs"),
				ev(3600, AgentError, onTurn(1), failed(tc.kind, tc.msg)), ev(9600, AgentError, onTurn(2), failed(tc.kind, tc.msg)))
			checkVerdict(t, Diagnose(events), tc.want)
		})
	}
}

func TestDiagnoseAgentWithoutErrors(t *testing.T) {
	t.Run("never answered before the hang-up", func(t *testing.T) {
		events := []Event{startedWith("hermes", "deepgram", "elevenlabs"), ev(15, MediaFirstIn), ev(1000, VADSpeechStart), ev(2000, VADSpeechEnd),
			ev(2200, STTFinal, withText("book a table")), ev(2205, TurnCommit, onTurn(1), withText("book a table")), ev(2205, AgentRequest, onTurn(1)),
			ev(11205, CallEnd, withReason("caller_hangup"))}
		checkVerdict(t, Diagnose(events), want{stage: "agent", problem: []string{"Hermes Agent never answered turn 1: nothing in 9.0 s"},
			fix: []string{"HANDSET_AGENT_TIMEOUT", "hermes gateway"}, evidence: []string{"agent.request turn 1", "no agent.first_token for turn 1"}})
	})
	t.Run("a caller who hangs up during a short wait", func(t *testing.T) {
		events := []Event{startedWith("hermes", "deepgram", "elevenlabs"), ev(15, MediaFirstIn), ev(1000, VADSpeechStart), ev(2000, VADSpeechEnd),
			ev(2200, STTFinal, withText("hi")), ev(2205, TurnCommit, onTurn(1)), ev(2205, AgentRequest, onTurn(1)),
			ev(3205, CallEnd, withReason("caller_hangup"))}
		checkVerdict(t, Diagnose(events), want{stage: ""})
	})
	t.Run("a barge-in is not a stuck agent", func(t *testing.T) {
		events := edit(healthyCall(), []string{AgentFirstToken, AgentDone, TTSRequest, TTSFirstByte, PlayoutFirstAudio, PlayoutMark, PlayoutDone},
			ev(2500, TurnInterrupted, onTurn(1)))
		if v := Diagnose(events); v.Stage == "agent" {
			t.Errorf("interrupted turns taken for a stuck agent: %+v", v)
		}
	})
	t.Run("empty replies", func(t *testing.T) {
		var events []Event
		for _, e := range edit(healthyCall(), []string{AgentFirstToken}) {
			if e.Type == AgentDone {
				e.Text = ""
			}
			events = append(events, e)
		}
		checkVerdict(t, Diagnose(events), want{stage: "agent", problem: []string{"answered every turn with an empty reply"}})
	})
}

func TestDiagnoseTTS(t *testing.T) {
	t.Run("key rejected: the agent replied but no audio went out", func(t *testing.T) {
		msg := "elevenlabs: synthesize: HTTP 401: invalid_api_key (auth)"
		var events []Event
		for _, e := range healthyCall() {
			switch e.Type {
			case TTSFirstByte, PlayoutFirstAudio, PlayoutMark:
				continue
			case TTSRequest:
				events = append(events, e, ev(e.MS+40, TTSError, onTurn(e.Turn), failed("auth", msg)))
				continue
			}
			events = append(events, e)
		}
		checkVerdict(t, Diagnose(events), want{stage: "tts",
			problem:  []string{"ELEVENLABS_API_KEY was rejected (HTTP 401): the agent replied but no audio went out"},
			fix:      []string{"ELEVENLABS_API_KEY", "HANDSET_ELEVENLABS_URL"},
			evidence: []string{"50 ms tts.error auth: " + msg, "tts.error turn 1 auth"}})
	})
	t.Run("openai voice refused", func(t *testing.T) {
		events := edit(healthyCall(), []string{CallStart}, startedWith("openai", "deepgram", "openai"),
			ev(3720, TTSError, onTurn(1), failed("bad_input", "openai: speech: HTTP 400: unknown voice (bad_input)")))
		checkVerdict(t, Diagnose(events), want{stage: "tts", problem: []string{"1 sentence of 3 sentences could not be spoken"},
			fix: []string{"HANDSET_OPENAI_TTS_VOICE"}})
	})
	t.Run("espeak missing", func(t *testing.T) {
		events := edit(healthyCall(), []string{CallStart}, startedWith("openai", "deepgram", "espeak"),
			ev(3720, TTSError, onTurn(1), failed("unknown", "espeak: exec: espeak-ng: not found")))
		checkVerdict(t, Diagnose(events), want{stage: "tts", problem: []string{"espeak-ng failed"}})
	})
	named := func(name string) func(*Event) { return func(e *Event) { e.Name = name } }
	t.Run("failures a retry or the fallback voice mended only warn", func(t *testing.T) {
		events := edit(healthyCall(), nil,
			ev(3720, TTSError, onTurn(1), named("elevenlabs"), failed("timeout", "elevenlabs: synthesize: no audio in time (3s) (timeout)")),
			ev(3721, TTSFallback, onTurn(1), named("openai")))
		v := Diagnose(events)
		checkVerdict(t, v, want{stage: ""})
		if !hasWarning(v, "tts", "ElevenLabs did not answer in time (1 failure), but every sentence was spoken") {
			t.Errorf("warnings %+v", v.Warnings)
		}
	})
	t.Run("a sentence no voice could speak", func(t *testing.T) {
		events := edit(healthyCall(), nil,
			ev(3720, TTSError, onTurn(1), named("elevenlabs"), failed("transient", "elevenlabs: synthesize: HTTP 500 (transient)")),
			ev(3721, TTSError, onTurn(1), named("openai"), failed("quota", "openai: speech: HTTP 429 (quota)")),
			ev(3722, TTSLost, onTurn(1), withText("We open at nine.")))
		checkVerdict(t, Diagnose(events), want{stage: "tts",
			problem:  []string{"ElevenLabs failed with a server or network error", "1 sentence of 3 sentences could not be spoken by any voice"},
			fix:      []string{"HANDSET_TTS_FALLBACK"},
			evidence: []string{"tts.error turn 1 transient", "tts.lost"}})
	})
	t.Run("no voice at all: the call ended", func(t *testing.T) {
		events := []Event{startedWith("openai", "deepgram", "elevenlabs"), ev(5, TTSRequest, withText("Hello.")),
			ev(8, TTSError, named("elevenlabs"), failed("auth", "elevenlabs: synthesize: HTTP 401: invalid_api_key (auth)")),
			ev(9, TTSLost, withText("Hello.")), ev(9, TTSRequest, withText("Sorry.")),
			ev(12, TTSError, named("elevenlabs"), failed("auth", "elevenlabs: synthesize: HTTP 401: invalid_api_key (auth)")),
			ev(13, TTSLost, withText("Sorry.")), ev(14, CallEnd, withReason("tts_failed"))}
		checkVerdict(t, Diagnose(events), want{stage: "tts",
			problem: []string{"ELEVENLABS_API_KEY was rejected (HTTP 401): no voice could speak, not even the error message, so the call ended (tts_failed)"},
			fix:     []string{"ELEVENLABS_API_KEY", "HANDSET_TTS_FALLBACK"}})
	})
	t.Run("no audio and no error", func(t *testing.T) {
		events := edit(healthyCall(), []string{TTSFirstByte, PlayoutFirstAudio, PlayoutMark, PlayoutDone})
		checkVerdict(t, Diagnose(events), want{stage: "tts", problem: []string{"ElevenLabs returned no audio for the greeting"},
			evidence: []string{"10 ms tts.request", "no tts.first_byte for the greeting"}})
	})
}

func TestDiagnosePlayout(t *testing.T) {
	t.Run("synthesised but never sent", func(t *testing.T) {
		events := edit(healthyCall(), []string{PlayoutFirstAudio, PlayoutMark, PlayoutDone})
		checkVerdict(t, Diagnose(events), want{stage: "playout", problem: []string{"audio was synthesised for the greeting but never reached Twilio"},
			fix: []string{"media leg failed"}, evidence: []string{"120 ms tts.first_byte", "no playout.first_audio"}})
	})
	t.Run("marks never came back", func(t *testing.T) {
		events := edit(healthyCall(), []string{PlayoutMark, PlayoutDone})
		checkVerdict(t, Diagnose(events), want{stage: "playout", problem: []string{"Twilio never confirmed playing any of it", "no marks came back in 13.9 s"},
			fix: []string{"drops WebSocket messages"}, evidence: []string{"130 ms playout.first_audio", "no playout.mark or playout.done"}})
	})
	t.Run("a short call with no marks yet is fine", func(t *testing.T) {
		events := []Event{startedWith("openai", "deepgram", "elevenlabs"), ev(10, TTSRequest), ev(15, MediaFirstIn), ev(100, TTSFirstByte),
			ev(110, PlayoutFirstAudio), ev(1500, CallEnd, withReason("caller_hangup"))}
		checkVerdict(t, Diagnose(events), want{stage: ""})
	})
}

func TestDiagnoseSlowReplies(t *testing.T) {
	t.Run("agent first token", func(t *testing.T) {
		slow := turnTimes{final: 200, token: 2200, ttsReq: 2300, ttsByte: 2400, audio: 2410}
		events := healthyCall(slow, slow, quick)
		v := Diagnose(events)
		checkVerdict(t, v, want{stage: "", problem: []string{Healthy}})
		if !hasWarning(v, "agent", "slow replies: the caller waits 2210 ms (p50)", "agent's first token (1995 ms p50)") ||
			!hasWarning(v, "agent", "", "HANDSET_AGENT_MODEL") {
			t.Errorf("warnings %+v", v.Warnings)
		}
		if s := stageOf(Trace(events), StageAgent); s.Status != StatusWarn || !strings.Contains(s.Problem, "slow replies") {
			t.Errorf("agent report %+v", s)
		}
	})
	t.Run("tts first byte", func(t *testing.T) {
		slow := turnTimes{final: 200, token: 400, ttsReq: 500, ttsByte: 2500, audio: 2510}
		v := Diagnose(healthyCall(slow, slow))
		if !hasWarning(v, "tts", "TTS's first byte (2000 ms p50)", "HANDSET_ELEVENLABS_MODEL") {
			t.Errorf("warnings %+v", v.Warnings)
		}
	})
	t.Run("the agent's first sentence", func(t *testing.T) {
		slow := turnTimes{final: 200, token: 400, ttsReq: 2400, ttsByte: 2500, audio: 2510}
		if v := Diagnose(healthyCall(slow, slow)); !hasWarning(v, "agent", "writing its first sentence", "HANDSET_SYSTEM_PROMPT") {
			t.Errorf("warnings %+v", v.Warnings)
		}
	})
	t.Run("handset itself", func(t *testing.T) {
		slow := turnTimes{final: 200, token: 400, ttsReq: 500, ttsByte: 600, audio: 2600}
		if v := Diagnose(healthyCall(slow, slow)); !hasWarning(v, "", "Handset itself (2005 ms p50)", "CPU") {
			t.Errorf("warnings %+v", v.Warnings)
		}
	})
	t.Run("late transcripts", func(t *testing.T) {
		late := turnTimes{final: 1400, token: 1800, ttsReq: 1900, ttsByte: 2000, audio: 2010}
		if v := Diagnose(healthyCall(late, late)); !hasWarning(v, "stt", "transcripts arrive late: 1400 ms", "HANDSET_DEEPGRAM_URL") {
			t.Errorf("warnings %+v", v.Warnings)
		}
	})
}

func TestDiagnoseEndings(t *testing.T) {
	for reason, words := range map[string][2]string{
		"internal_error": {"a bug in Handset", "server log"},
		"max_duration":   {"maximum call length", "HANDSET_MAX_CALL"},
	} {
		events := healthyCall()
		events[len(events)-1].Reason = reason
		v := Diagnose(events)
		if v.Stage != "" || !hasWarning(v, "", words[0], words[1]) {
			t.Errorf("%s: %+v", reason, v)
		}
	}
}

// TestDiagnoseNamesTheFirstBrokenStage: with several stages broken, the earliest one in
// the flow is named and the others are kept as warnings.
func TestDiagnoseNamesTheFirstBrokenStage(t *testing.T) {
	var events []Event
	for _, e := range healthyCall() {
		switch e.Type {
		case AgentFirstToken, AgentDone:
			continue
		case TTSFirstByte, PlayoutFirstAudio, PlayoutMark:
			continue
		case TTSRequest:
			events = append(events, ev(e.MS+1, TTSError, onTurn(e.Turn), failed("auth", "elevenlabs: HTTP 401 (auth)")))
		}
		events = append(events, e)
	}
	events = edit(events, nil, ev(3600, AgentError, onTurn(1), failed("transient", "openai: chat: HTTP 500 (transient)")))
	v := Diagnose(events)
	checkVerdict(t, v, want{stage: "agent"})
	if !hasWarning(v, "tts", "ELEVENLABS_API_KEY") {
		t.Errorf("the TTS failure should be a warning: %+v", v.Warnings)
	}
}

// hasWarning reports whether a warning of stage says problem (and fix, when given).
func hasWarning(v Verdict, stage string, problem string, fix ...string) bool {
	for _, w := range v.Warnings {
		if w.Stage != stage || !strings.Contains(w.Problem, problem) {
			continue
		}
		ok := true
		for _, f := range fix {
			ok = ok && strings.Contains(w.Fix+" "+w.Problem, f)
		}
		if ok {
			return true
		}
	}
	return false
}

// FuzzDiagnose: any journal, torn, reordered or hand-edited, gets a trace and a verdict
// naming a known stage, never a panic.
func FuzzDiagnose(f *testing.F) {
	var b strings.Builder
	for _, e := range healthyCall() {
		raw, _ := json.Marshal(e)
		b.Write(raw)
		b.WriteByte('\n')
	}
	f.Add(b.String())
	f.Add(`{"type":"call.start","carrier":"twilio"}` + "\n" + `{"ms":-5,"type":"stt.error","kind":"auth","message":"HTTP 4"}` + "\n")
	f.Add(`{"ms":9,"type":"turn.commit","turn":-1}` + "\n" + `{"ms":3,"type":"agent.request","turn":-1}` + "\n" + `{"type":"stt.final"}`)
	known := map[string]bool{"": true, StageCarrier: true, StageVAD: true, StageSTT: true, StageAgent: true, StageTTS: true, StagePlayout: true}
	f.Fuzz(func(t *testing.T, journal string) {
		events, _ := ReadEvents(strings.NewReader(journal))
		tr := Trace(events)
		if len(tr.Stages) != 6 {
			t.Fatalf("%d stages", len(tr.Stages))
		}
		v := Diagnose(events)
		if !known[v.Stage] || v.Problem == "" || (v.Stage != "" && v.Fix == "") {
			t.Fatalf("verdict %+v", v)
		}
	})
}
