package tracing

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/handset-voice/handset/internal/tracing/tracingtest"
)

// BenchmarkBuildCallSpans: reading one call's journal (a greeting, three turns, a
// barge-in, an agent error) into its spans, up to the SDK's processor.
func BenchmarkBuildCallSpans(b *testing.B) {
	events := threeTurns()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())))
	defer func() { _ = provider.Shutdown(b.Context()) }()
	tracer := provider.Tracer("bench")
	b.ReportAllocs()
	for b.Loop() {
		emit(tracer, callEvents{id: "call-bench", events: events})
	}
}

// BenchmarkExportCall: one call's spans built and exported over OTLP/HTTP to a collector
// on this machine, flushed every call so each iteration pays its own request.
func BenchmarkExportCall(b *testing.B) {
	col := tracingtest.New()
	defer col.Close()
	x, err := New(Options{Endpoint: col.URL(), Getenv: environ(), Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = x.Close(b.Context()) }()
	events := threeTurns()
	b.ReportAllocs()
	for b.Loop() {
		emit(x.tracer, callEvents{id: "call-bench", events: events})
		if err := x.provider.ForceFlush(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	if accepted, _ := col.Requests(); accepted == 0 {
		b.Fatal("nothing reached the collector")
	}
}
