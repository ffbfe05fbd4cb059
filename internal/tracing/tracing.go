// Package tracing exports each call as an OpenTelemetry trace over OTLP/HTTP: a span for
// the call, one per turn, and one per stage of a turn, built from the call's journal so
// that their figures are the journal's. It is off unless an OTLP endpoint is set.
package tracing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/handset-voice/handset/internal/obs"
)

// The standard variables this package reads itself; the SDK reads the rest
// (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_RESOURCE_ATTRIBUTES, …).
const (
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envSDKDisabled    = "OTEL_SDK_DISABLED"
	envTracesExporter = "OTEL_TRACES_EXPORTER"
)

// Bounds: what one call keeps in memory for its trace, and how many finished calls may
// wait for their spans to be built before a call's trace is dropped.
const (
	maxCallEvents = 10000
	pendingCalls  = 64
)

// ServiceName is the service.name of the traces unless OTEL_SERVICE_NAME says otherwise.
const ServiceName = "handset"

// Options configure an Exporter.
type Options struct {
	// Endpoint is the collector's base address (OTEL_EXPORTER_OTLP_ENDPOINT,
	// http://collector:4318); traces go to its /v1/traces.
	Endpoint string
	// Getenv reads the process's environment (nil: os.Getenv).
	Getenv  func(string) string
	Version string // service.version
	Node    string // service.instance.id
	Logger  *slog.Logger
}

func (o Options) getenv(key string) string {
	if o.Getenv == nil {
		return os.Getenv(key)
	}
	return o.Getenv(key)
}

// On reports whether traces are exported: an endpoint is set (the OTLP one or the traces
// one), and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none turns them off.
func (o Options) On() bool {
	if strings.EqualFold(strings.TrimSpace(o.getenv(envSDKDisabled)), "true") ||
		strings.EqualFold(strings.TrimSpace(o.getenv(envTracesExporter)), "none") {
		return false
	}
	return o.Endpoint != "" || o.getenv(envTracesEndpoint) != ""
}

// Exporter turns finished calls into traces and hands them to the SDK's batch span
// processor, which exports them in the background. Safe for concurrent use.
type Exporter struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	log      *slog.Logger
	calls    chan callEvents
	built    chan struct{} // closed when the builder has stopped

	mu     sync.Mutex // guards closed, and sends on calls
	closed bool

	dropped atomic.Int64 // calls whose trace was dropped: the builder was too far behind
}

// New makes the exporter Options describe; nil (and no goroutine, no connection) when
// traces are off.
func New(o Options) (*Exporter, error) {
	if !o.On() {
		return nil, nil
	}
	log := cmp.Or(o.Logger, slog.Default())
	exp, err := otlptracehttp.New(context.Background(), o.exporterOptions()...)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter: %w", err)
	}
	res, err := resourceOf(o)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	setErrorHandler(log)
	return start(sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		// The builder waits when the SDK's queue is full, so the drop is counted where it
		// can be said: a call's whole trace, at the builder's queue.
		sdktrace.WithBatcher(exp, sdktrace.WithBlocking()),
	), log), nil
}

// start runs an exporter on provider.
func start(provider *sdktrace.TracerProvider, log *slog.Logger) *Exporter {
	x := &Exporter{
		provider: provider,
		tracer:   provider.Tracer("github.com/handset-voice/handset/internal/tracing"),
		log:      log,
		calls:    make(chan callEvents, pendingCalls),
		built:    make(chan struct{}),
	}
	go x.build()
	return x
}

// resourceOf is the service: handset, its version and this node; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override.
func resourceOf(o Options) (*resource.Resource, error) {
	own := resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(ServiceName),
		semconv.ServiceVersion(cmp.Or(o.Version, "dev")),
		semconv.ServiceInstanceID(o.Node),
	)
	r, err := resource.Merge(resource.Default(), own)
	if err != nil {
		return nil, err
	}
	return resource.Merge(r, resource.Environment())
}

// The SDK's error handler is the process's: it logs to the latest exporter's logger.
var (
	errorHandlerOnce sync.Once
	errorLog         atomic.Pointer[slog.Logger]
)

// setErrorHandler sends the SDK's errors (a collector refusing a batch, unreachable) to
// the log, at most one a minute: a collector that is down must not flood it.
func setErrorHandler(log *slog.Logger) {
	errorLog.Store(log)
	errorHandlerOnce.Do(func() {
		var mu sync.Mutex
		var last time.Time
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if now := time.Now(); now.Sub(last) >= time.Minute {
				last = now
				errorLog.Load().Warn("OpenTelemetry export failed (spans are dropped once its queue is full)", "err", err)
			}
		}))
	})
}

// Follow returns the journal tee for one call (obs.Journal.Tee): it keeps the call's
// events, bounded, and at call.end queues them to become the call's trace. It runs under
// the journal's lock, so it only appends and never waits.
func (x *Exporter) Follow(callID string) func(obs.Event) {
	c := callEvents{id: callID}
	return func(e obs.Event) {
		if e.Type == obs.CallEnd {
			c.events = append(c.events, e)
			x.queue(c)
			c = callEvents{id: callID}
			return
		}
		if len(c.events) >= maxCallEvents {
			c.omitted++
			return
		}
		c.events = append(c.events, e)
	}
}

// queue hands a finished call to the builder, or drops it when the builder is that far
// behind (the collector is down or slow and the SDK's queue is full).
func (x *Exporter) queue(c callEvents) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return
	}
	select {
	case x.calls <- c:
	default:
		if x.dropped.Add(1) == 1 {
			x.log.Warn("OpenTelemetry export is behind: call traces are dropped (the collector is down or slow)", "call", c.id)
		}
	}
}

// build turns the queued calls into spans until Close.
func (x *Exporter) build() {
	defer close(x.built)
	for c := range x.calls {
		emit(x.tracer, c)
	}
}

// Dropped is how many calls' traces were dropped so far.
func (x *Exporter) Dropped() int64 { return x.dropped.Load() }

// Close builds the calls already queued and exports what is pending, until ctx ends;
// calls that end later are not traced. Safe to call on a nil Exporter, and again.
func (x *Exporter) Close(ctx context.Context) error {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	already := x.closed
	if !already {
		x.closed = true
		close(x.calls)
	}
	x.mu.Unlock()
	if already {
		return nil
	}
	var err error
	select {
	case <-x.built:
	case <-ctx.Done():
		err = fmt.Errorf("OpenTelemetry: calls left untraced: %w", ctx.Err())
	}
	if n := x.dropped.Load(); n > 0 {
		x.log.Warn("OpenTelemetry: call traces dropped", "calls", n)
	}
	return errors.Join(err, x.provider.Shutdown(ctx))
}
