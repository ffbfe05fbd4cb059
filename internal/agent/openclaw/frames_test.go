package openclaw

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/voice"
)

func str(s string) *string { return &s }

func snapshot(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "assistant", "content": []map[string]string{{"type": "text", "text": text}}})
	return b
}

// TestReplyText covers the delta and final rules: incremental deltaText, cumulative
// snapshots, replace, a final that repeats the reply, a final with no deltas before it.
func TestReplyText(t *testing.T) {
	cases := []struct {
		name   string
		events []chatEvent
		want   []string
	}{
		{"incremental deltas, repeated final", []chatEvent{
			{State: "delta", DeltaText: str("Hello ")}, {State: "delta", DeltaText: str("world.")},
			{State: "final", Message: snapshot("Hello world.")}}, []string{"Hello ", "world."}},
		{"snapshot wins over deltaText", []chatEvent{
			{State: "delta", DeltaText: str("Hello "), Message: snapshot("Hello ")},
			{State: "delta", DeltaText: str("Hello world"), Message: snapshot("Hello world")}, // cumulative deltaText
			{State: "final", Message: snapshot("Hello world.")}}, []string{"Hello ", "world", "."}},
		{"final only", []chatEvent{{State: "status"}, {State: "final", Message: snapshot("All at once.")}}, []string{"All at once."}},
		{"final without message", []chatEvent{{State: "delta", DeltaText: str("Hi.")}, {State: "final"}}, []string{"Hi."}},
		{"replace rewrites what was spoken", []chatEvent{
			{State: "delta", DeltaText: str("Helo")}, {State: "delta", DeltaText: str("Hello there"), Replace: true},
			{State: "delta", DeltaText: str(", friend")}, {State: "final"}}, []string{"Helo", ", friend"}},
		{"string content", []chatEvent{{State: "final", Message: json.RawMessage(`{"role":"assistant","content":"plain"}`)}}, []string{"plain"}},
	}
	for _, c := range cases {
		r := &run{a: &Agent{log: slog.New(slog.DiscardHandler), runs: map[string]*run{}}}
		var got []string
		for _, ev := range c.events {
			if text := r.handle(ev); text != "" {
				got = append(got, text)
			}
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") || !errors.Is(r.err, io.EOF) {
			t.Errorf("%s: got %q (end %v), want %q then EOF", c.name, got, r.err, c.want)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	for _, c := range []struct {
		ev   chatEvent
		kind voice.ErrorKind
	}{
		{chatEvent{ErrorKind: "rate_limit"}, voice.KindQuota},
		{chatEvent{ErrorKind: "timeout"}, voice.KindTimeout},
		{chatEvent{ErrorKind: "context_length"}, voice.KindBadInput},
		{chatEvent{ErrorMessage: "⚠️ Agent failed before reply"}, voice.KindUnknown},
	} {
		if k := c.ev.runError().Kind; k != c.kind {
			t.Errorf("%+v: kind %v, want %v", c.ev, k, c.kind)
		}
	}
	for _, c := range []struct {
		raw  string
		kind voice.ErrorKind
	}{
		{`{"code":"INVALID_REQUEST","message":"unauthorized: gateway token mismatch","details":{"code":"AUTH_TOKEN_MISMATCH"}}`, voice.KindAuth},
		{`{"code":"INVALID_REQUEST","message":"protocol mismatch","details":{"code":"PROTOCOL_MISMATCH"}}`, voice.KindProtocol},
		{`{"code":"UNAVAILABLE","message":"gateway starting; retry shortly","retryable":true}`, voice.KindTransient},
		{`{"code":"FORBIDDEN","message":"missing scope","details":{"code":"MISSING_SCOPE"}}`, voice.KindAuth},
		{`{"code":"NOT_PAIRED","message":"pairing required"}`, voice.KindAuth},
		{`{"code":"INVALID_REQUEST","message":"Multiple agents are configured"}`, voice.KindBadInput},
	} {
		var ge gatewayError
		if err := json.Unmarshal([]byte(c.raw), &ge); err != nil {
			t.Fatal(err)
		}
		if k := ge.kind(); k != c.kind {
			t.Errorf("%s: kind %v, want %v", c.raw, k, c.kind)
		}
	}
	if long := clip(strings.Repeat("é", 300)); len(long) > 204 || !strings.HasSuffix(long, "…") {
		t.Errorf("clip gave %d bytes", len(long))
	}
}

var frameSeeds = []string{
	`{"type":"event","event":"connect.challenge","payload":{"nonce":"35ff3e02","ts":1795316221920}}`,
	`{"type":"res","id":"r1","ok":true,"payload":{"type":"hello-ok","protocol":4,"auth":{"scopes":["operator.read","operator.write"]},"policy":{"tickIntervalMs":30000}}}`,
	`{"type":"res","id":"h2","ok":false,"error":{"code":"INVALID_REQUEST","message":"unauthorized","details":{"code":"AUTH_TOKEN_MISMATCH"}}}`,
	`{"type":"event","event":"chat","payload":{"runId":"r","sessionKey":"agent:main:x","seq":6,"state":"delta","deltaText":"Hi","message":{"role":"assistant","content":[{"type":"text","text":"Hi"}]}},"seq":12}`,
	`{"type":"event","event":"chat","payload":{"runId":"r","seq":9,"state":"error","errorMessage":"LLM request failed","errorDetail":{"httpStatus":400}},"seq":13}`,
	`{"type":"event","event":"tick","payload":{"ts":1},"seq":8}`,
	`{"type":"event","event":"agent","payload":{"runId":"r","stream":"item","data":{"kind":"tool","phase":"start","title":"Ls ."}}}`,
	`{"type":"res","ok":true}`,
	`{"type":"event"}`,
	`[1,2]`,
	`{"type":"res","id":"x","ok":false}`,
	`{"type":"event","event":"agent","payload":{"runId":"r","stream":"usage","data":{"outputTokens":5},"sessionKey":"agent:main:call-42","seq":40},"seq":40}`,
}

func TestParseFrame(t *testing.T) {
	wantErr := map[int]bool{7: true, 8: true, 9: true}
	for i, s := range frameSeeds {
		f, err := parseFrame([]byte(s))
		if (err != nil) != wantErr[i] {
			t.Errorf("seed %d: err %v", i, err)
		}
		if err != nil && !errors.Is(err, errBadFrame) {
			t.Errorf("seed %d: error %v is not errBadFrame", i, err)
		}
		if i == 10 && (f.Error == nil || f.Error.kind() != voice.KindUnknown) {
			t.Errorf("a failed response without an error object: %+v", f.Error)
		}
	}
}

// FuzzParseFrame: any input gives a frame or errBadFrame, never a panic; a chat event
// that parses yields text and a classification without panicking either.
func FuzzParseFrame(f *testing.F) {
	for _, s := range frameSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := parseFrame(data)
		if err != nil {
			if !errors.Is(err, errBadFrame) {
				t.Fatalf("error %v is not errBadFrame", err)
			}
			return
		}
		if fr.Type == "res" && !fr.OK {
			_ = fr.Error.kind()
			_ = fr.Error.Error()
		}
		if fr.Type == "event" && fr.Event == "agent" {
			ev, ok := parseAgentEvent(fr.Payload)
			switch {
			case ok && ev.RunID == "":
				t.Fatalf("agent event %+v without a run", ev)
			case ok && ev.State == "progress" && ev.Progress == "":
				t.Fatalf("progress %+v without a label", ev)
			case ok && ev.State == "usage" && ev.Usage.OutputTokens <= 0:
				t.Fatalf("usage %+v without a count", ev)
			case ok && ev.State != "progress" && ev.State != "usage":
				t.Fatalf("agent event made state %q", ev.State)
			}
		}
		if fr.Type == "event" && fr.Event == "chat" {
			ev, err := parseChat(fr.Payload)
			if err != nil {
				return
			}
			r := &run{a: &Agent{log: slog.New(slog.DiscardHandler), runs: map[string]*run{}}}
			r.handle(ev)
			_ = ev.runError().Error()
		}
	})
}
