package gateway

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/tracing"
	"github.com/handset-voice/handset/internal/tracing/tracingtest"
)

// tracedConfig is a gateway with fakes whose calls are traced to col; the caller says
// transcripts. The batch processor exports soon after a call ends (the SDK reads its
// setting from the process's environment).
func tracedConfig(t *testing.T, col *tracingtest.Collector, transcripts ...string) *config.Config {
	t.Helper()
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	return fakesConfigHearing(t, transcripts, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL(), "HANDSET_NODE_ID=node-traced")
}

func dialTwilio(t *testing.T, ctx context.Context, gw *Gateway) *twiliocaller.Call {
	t.Helper()
	c, err := twiliocaller.Dial(ctx, twiliocaller.Options{BaseURL: "http://" + gw.Addr().String(), AuthToken: testTwilioToken, InsecureStreamURL: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// says: the caller speaks for d, and waits until the fake line has sent it.
func says(t *testing.T, ctx context.Context, c *twiliocaller.Call, d time.Duration, seed int64) {
	t.Helper()
	if err := c.SayAndWait(ctx, audiotest.Mulaw(audiotest.SpeechLike(8000, d, seed))); err != nil {
		t.Fatal(err)
	}
}

// played waits until the caller's line played the mark named (or the call ended).
func played(t *testing.T, ctx context.Context, c *twiliocaller.Call, mark string) {
	t.Helper()
	err := c.WaitFor(ctx, func(s twiliocaller.Snapshot) bool {
		for _, m := range s.Marks() {
			if m.Name == mark && m.Echoed && !m.Cleared {
				return true
			}
		}
		return s.Ended
	})
	if err != nil || c.Snapshot().Ended {
		t.Fatalf("mark %s never played (err %v)", mark, err)
	}
}

// greetedCall: a call that hears the greeting and hangs up.
func greetedCall(t *testing.T, ctx context.Context, gw *Gateway) {
	t.Helper()
	c := dialTwilio(t, ctx, gw)
	played(t, ctx, c, "t0-end")
	hangUp(t, c)
}

// callSpans counts the call spans among spans.
func callSpans(spans []tracingtest.Span) int {
	n := 0
	for _, s := range spans {
		if s.Name == tracing.SpanCall {
			n++
		}
	}
	return n
}

func hangUp(t *testing.T, c *twiliocaller.Call) {
	t.Helper()
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
}

// onlyJournal reads the one call journal under the data dir: its call id and events.
func onlyJournal(t *testing.T, cfg *config.Config) (string, []obs.Event) {
	t.Helper()
	dirs, err := os.ReadDir(filepath.Join(cfg.DataDir, "calls"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("call journals: %v (err %v), want one", dirs, err)
	}
	id := dirs[0].Name()
	f, err := os.Open(filepath.Join(obs.Dir(cfg.DataDir, id), "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := obs.ReadEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	return id, events
}

func tenthsOf(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*10) / 10
}

// TestCallTrace: a call with two turns, the caller barging in on the first, reaches the collector as one trace:
// the call span, a span per turn, stage spans lasting what the journal says, and the
// barge-in as an event of the turn it interrupted.
func TestCallTrace(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	cfg := tracedConfig(t, col, "LONG SLOW tell me everything about the menu", "stop please")
	gw, _ := serveGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a safety net
	defer cancel()

	c := dialTwilio(t, ctx, gw)
	played(t, ctx, c, "t0-end")
	says(t, ctx, c, 1200*time.Millisecond, 1)
	played(t, ctx, c, "t1-s1")
	says(t, ctx, c, 1000*time.Millisecond, 2) // over the long reply
	played(t, ctx, c, "t2-end")
	hangUp(t, c)

	if err := col.WaitFor(ctx, func(spans []tracingtest.Span) bool { return callSpans(spans) == 1 }); err != nil {
		t.Fatal(err)
	}
	id, events := onlyJournal(t, cfg)
	spans := col.Spans()
	var call tracingtest.Span
	for _, s := range spans {
		if s.Name == tracing.SpanCall {
			call = s
		}
	}
	if call.Attrs[tracing.AttrCallID] != id || call.Resource["service.instance.id"] != "node-traced" {
		t.Errorf("call span %v, resource %v: want call %s on node-traced", call.Attrs, call.Resource, id)
	}
	if hash, _ := call.Attrs[tracing.AttrCallerHash].(string); hash == "" || strings.Contains(hash, strings.TrimPrefix(twiliocaller.DefaultFrom, "+")) {
		t.Errorf("caller hash %q: want a hash, not the number", hash)
	}
	turnSpans := map[int64]tracingtest.Span{}
	stages := map[string]map[string]tracingtest.Span{} // turn span id → stage name → span
	for _, s := range spans {
		if s.TraceID != call.TraceID {
			t.Errorf("span %s is not in the call's trace", s.Name)
		}
		if s.Name == tracing.SpanTurn {
			turnSpans[s.Attrs[tracing.AttrTurnNumber].(int64)] = s
		}
	}
	for _, s := range spans {
		if s.Name != tracing.SpanCall && s.Name != tracing.SpanTurn {
			if stages[s.ParentID] == nil {
				stages[s.ParentID] = map[string]tracingtest.Span{}
			}
			stages[s.ParentID][s.Name] = s
		}
	}
	turns := obs.Turns(events)
	if len(turns) != 2 || !turns[0].Interrupted {
		t.Fatalf("the journal has turns %+v, want 2, the first interrupted", turns)
	}
	for _, sum := range turns {
		ts, ok := turnSpans[int64(sum.Turn)]
		if !ok {
			t.Errorf("no span for turn %d", sum.Turn)
			continue
		}
		for name, want := range map[string]float64{
			tracing.SpanSTTEndpoint: sum.EndpointMS, tracing.SpanAgentFirstTok: sum.AgentTTFTMS, tracing.SpanTTSFirstByte: sum.TTSTTFBMS,
		} {
			s, ok := stages[ts.SpanID][name]
			if !ok || want < 0 {
				t.Errorf("turn %d: %s span %v, journal figure %.1f ms: want both", sum.Turn, name, ok, want)
				continue
			}
			if got := tenthsOf(s.Duration()); got != want {
				t.Errorf("turn %d: %s lasts %.1f ms, the journal says %.1f ms", sum.Turn, name, got, want)
			}
		}
		if got := ts.Attrs[tracing.AttrInterrupted]; got != sum.Interrupted {
			t.Errorf("turn %d interrupted %v, the journal says %v", sum.Turn, got, sum.Interrupted)
		}
	}
	var bargeIn bool
	for _, e := range turnSpans[1].Events {
		bargeIn = bargeIn || e.Name == obs.BargeIn
	}
	if !bargeIn {
		t.Error("turn 1's span has no barge_in event")
	}
}

// TestRefusingCollectorDoesNotHoldCalls: while the collector is stuck, and then answers
// 503, calls go on as ever; the first call's trace arrives once the collector takes it.
func TestRefusingCollectorDoesNotHoldCalls(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	col.Hold()
	col.Refuse(tracingtest.Refusal{Status: 503, RetryAfter: "1"})
	cfg := tracedConfig(t, col)
	gw, stop := serveGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a safety net
	defer cancel()

	greetedCall(t, ctx, gw)
	// The first call's spans are on their way to a collector that does not answer; the
	// next call is answered and ends all the same.
	greetedCall(t, ctx, gw)
	if accepted, refused := col.Requests(); accepted+refused != 0 {
		t.Fatalf("the collector answered %d requests while held", accepted+refused)
	}

	col.Release()
	if err := col.WaitFor(ctx, func(spans []tracingtest.Span) bool { return callSpans(spans) == 2 }); err != nil {
		t.Fatal(err)
	}
	if _, refused := col.Requests(); refused != 1 {
		t.Errorf("%d requests refused, want the one 503", refused)
	}
	stop()
}

// TestCloseFlushesTraces: spans still waiting in the batch processor when the gateway
// closes reach the collector within the bound.
func TestCloseFlushesTraces(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	cfg := tracedConfig(t, col)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000") // an hour: only Close sends them
	gw, stop := serveGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a safety net
	defer cancel()
	greetedCall(t, ctx, gw)
	begun := time.Now()
	stop()
	if took := time.Since(begun); took > tracingFlushWithin+5*time.Second {
		t.Errorf("closing took %v", took)
	}
	if accepted, _ := col.Requests(); accepted == 0 || len(col.Spans()) == 0 {
		t.Error("the call's trace was not exported as the gateway closed")
	}
}

// TestNoEndpointNoExporter: without an endpoint nothing of OpenTelemetry runs (the
// package's goroutine check holds it to no goroutine left behind).
func TestNoEndpointNoExporter(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	gw, _ := serveGateway(t, fakesConfig(t))
	if gw.srv.traces != nil {
		t.Error("an exporter was made with no endpoint set")
	}
}
