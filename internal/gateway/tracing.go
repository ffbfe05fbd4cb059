package gateway

import (
	"context"
	"log/slog"
	"time"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/tracing"
	"github.com/handset-voice/handset/internal/voice"
)

// tracingFlushWithin bounds how long a closing gateway waits for its last call traces to
// reach the collector.
const tracingFlushWithin = 5 * time.Second

// newTracing starts exporting each call as an OpenTelemetry trace when an OTLP endpoint
// is set (OTEL_EXPORTER_OTLP_ENDPOINT, or the SDK's own variables); nil when none is.
func newTracing(cfg *config.Config, version string, log *slog.Logger) (*tracing.Exporter, error) {
	return tracing.New(tracing.Options{Endpoint: cfg.OTLPEndpoint, Version: version, Node: cfg.Node(), Logger: log})
}

// traceCall has the call's journal feed its trace.
func (s *server) traceCall(journal *obs.Journal, id voice.CallID) {
	if s.traces != nil {
		journal.Tee(s.traces.Follow(string(id)))
	}
}

// closeTracing exports the traces of the calls that ended, within tracingFlushWithin.
func (s *server) closeTracing() {
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushWithin)
	defer cancel()
	if err := s.traces.Close(ctx); err != nil {
		s.log.Warn("call traces not all exported", "err", err)
	}
}
