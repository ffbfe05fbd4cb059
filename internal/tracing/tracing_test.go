package tracing

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/tracing/tracingtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// environ is a process environment for Options.Getenv.
func environ(kv ...string) func(string) string {
	m := map[string]string{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func TestOn(t *testing.T) {
	for _, c := range []struct {
		name     string
		endpoint string
		env      []string
		want     bool
	}{
		{"nothing set", "", nil, false},
		{"the OTLP endpoint", "http://collector:4318", nil, true},
		{"only the traces endpoint", "", []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://collector:4318/v1/traces"}, true},
		{"the SDK disabled", "http://collector:4318", []string{"OTEL_SDK_DISABLED=TRUE"}, false},
		{"the SDK disabled false", "http://collector:4318", []string{"OTEL_SDK_DISABLED=false"}, true},
		{"no traces exporter", "http://collector:4318", []string{"OTEL_TRACES_EXPORTER=none"}, false},
	} {
		if got := (Options{Endpoint: c.endpoint, Getenv: environ(c.env...)}).On(); got != c.want {
			t.Errorf("%s: On = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestOffMakesNothing: with no endpoint there is no exporter, and Close on none is fine.
// (The package's goroutine check holds it to starting nothing.)
func TestOffMakesNothing(t *testing.T) {
	x, err := New(Options{Getenv: environ(), Logger: quietLog})
	if x != nil || err != nil {
		t.Fatalf("New = %v, %v; want no exporter", x, err)
	}
	if err := x.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// exportTo runs an exporter sending to col; it closes with the test.
func exportTo(t *testing.T, col *tracingtest.Collector, env ...string) *Exporter {
	t.Helper()
	x, err := New(Options{Endpoint: col.URL(), Getenv: environ(env...), Version: "v1.2.3", Node: "node-a", Logger: quietLog})
	if err != nil || x == nil {
		t.Fatalf("New = %v, %v", x, err)
	}
	t.Cleanup(func() { _ = x.Close(context.Background()) })
	return x
}

func play(x *Exporter, id string, events []obs.Event) {
	tee := x.Follow(id)
	for _, e := range events {
		tee(e)
	}
}

// TestExportsToACollector: Close flushes the call's trace to the collector over
// OTLP/HTTP, under this service's resource.
func TestExportsToACollector(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	x := exportTo(t, col)
	events := healthyCall()
	play(x, "call-7", events)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := x.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	spans := col.Spans()
	// a call, the greeting and two turns, with their stages
	var calls, turns int
	for _, s := range spans {
		switch s.Name {
		case SpanCall:
			calls++
			if s.Attrs[AttrCallID] != "call-7" || !s.Start.Equal(events[0].TS) {
				t.Errorf("call span: %v from %v", s.Attrs, s.Start)
			}
			for key, want := range map[string]string{"service.name": "handset", "service.version": "v1.2.3", "service.instance.id": "node-a"} {
				if got := s.Resource[key]; got != want {
					t.Errorf("resource %s = %v, want %q", key, got, want)
				}
			}
		case SpanTurn:
			turns++
		}
		if s.TraceID != spans[0].TraceID {
			t.Error("the call's spans are not one trace")
		}
	}
	if calls != 1 || turns != 3 {
		t.Errorf("%d call spans and %d turn spans, want 1 and 3", calls, turns)
	}
}

// TestTracesEndpointAsGiven: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the full address, and
// the SDK's other variables apply (read from the process's environment).
func TestTracesEndpointAsGiven(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", col.URL()+"/v1/traces")
	t.Setenv("OTEL_SERVICE_NAME", "front-desk")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	x, err := New(Options{Logger: quietLog})
	if err != nil || x == nil {
		t.Fatalf("New = %v, %v", x, err)
	}
	play(x, "call-8", healthyCall())
	if err := x.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := col.Spans()
	if len(spans) == 0 {
		t.Fatal("nothing exported")
	}
	if got := spans[0].Resource["service.name"]; got != "front-desk" {
		t.Errorf("service.name %v, want OTEL_SERVICE_NAME's front-desk", got)
	}
	if accepted, _ := col.Requests(); col.Gzipped() != accepted {
		t.Errorf("%d of %d requests gzip-compressed, want all (OTEL_EXPORTER_OTLP_COMPRESSION)", col.Gzipped(), accepted)
	}
}

// TestRetriesARefusingCollector: a collector answering 429 with Retry-After gets the
// spans once it takes them (the gateway's test has one answering 503).
func TestRetriesARefusingCollector(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	col.Refuse(tracingtest.Refusal{Status: 429, RetryAfter: "1"})
	x := exportTo(t, col)
	play(x, "call-9", healthyCall())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := x.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	accepted, refused := col.Requests()
	if refused != 1 || accepted == 0 {
		t.Errorf("requests: %d refused, %d accepted; want 1 and then the spans", refused, accepted)
	}
	if len(col.Spans()) == 0 {
		t.Error("no spans after the retries")
	}
}

// TestStuckCollectorNeverBlocksCalls: with a collector that answers nothing, calls keep
// ending without waiting; once the queues are full, whole call traces are dropped and
// counted.
func TestStuckCollectorNeverBlocksCalls(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	col.Hold()
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "64") // the SDK reads these from the process
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "16")
	x := exportTo(t, col)
	events := healthyCall()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for x.Dropped() == 0 {
			play(x, "call", events)
		}
	}()
	select {
	case <-ended:
	case <-time.After(60 * time.Second):
		t.Fatal("calls were held up by a stuck collector")
	}
	col.Release()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := x.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestProbe: the probe's empty export is taken by a collector, and fails, at once, on
// one that refuses it or on an address where nothing listens.
func TestProbe(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	o := Options{Endpoint: col.URL() + "/", Getenv: environ()}
	if got, want := o.Address(), col.URL()+"/v1/traces"; got != want {
		t.Errorf("Address = %q, want %q", got, want)
	}
	if err := Probe(t.Context(), o); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if accepted, _ := col.Requests(); accepted != 1 {
		t.Errorf("the collector took %d requests, want the probe's", accepted)
	}
	col.Refuse(tracingtest.Refusal{Status: 503, RetryAfter: "30"})
	if err := Probe(t.Context(), o); err == nil {
		t.Error("Probe of a refusing collector succeeded")
	}
	if _, refused := col.Requests(); refused != 1 {
		t.Errorf("%d probes refused, want 1: no retry", refused)
	}
	gone := tracingtest.New()
	gone.Close()
	if err := Probe(t.Context(), Options{Endpoint: gone.URL(), Getenv: environ()}); err == nil {
		t.Error("Probe of a closed address succeeded")
	}
}

// TestCloseIsBounded: Close gives a stuck collector no more than its context's time, and
// says the spans did not all go.
func TestCloseIsBounded(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	col.Hold()
	x := exportTo(t, col)
	play(x, "call-10", healthyCall())
	const bound = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	begun := time.Now()
	err := x.Close(ctx)
	if took := time.Since(begun); took > bound+5*time.Second {
		t.Errorf("Close took %v with a bound of %v", took, bound)
	}
	if err == nil {
		t.Error("Close says all was exported to a collector that answered nothing")
	}
}
