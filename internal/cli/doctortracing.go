package cli

import (
	"context"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/tracing"
)

// secTracing is doctor's section for the OpenTelemetry export, listed only when it is on.
const secTracing = "tracing"

// tracingChecks: when traces are exported, the collector takes an (empty) export. Calls
// never wait on it, so a collector that does not is a warning.
func (d *doctorRun) tracingChecks() []doctor.Check {
	o := tracing.Options{Endpoint: d.cfg.OTLPEndpoint}
	if !o.On() {
		return nil
	}
	return []doctor.Check{doctor.Net(secTracing, "collector", func(ctx context.Context) doctor.Result {
		if err := tracing.Probe(ctx, o); err != nil {
			return doctor.WarnResult(o.Address()+": "+netfail.Describe(err),
				"run an OpenTelemetry collector that takes OTLP over HTTP there (port 4318), or fix OTEL_EXPORTER_OTLP_ENDPOINT; calls go on, their traces are dropped")
		}
		return doctor.OKResult(o.Address() + " takes OTLP/HTTP exports")
	})}
}
