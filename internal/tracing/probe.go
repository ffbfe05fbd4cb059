package tracing

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// Address is where traces go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or the OTLP
// endpoint's /v1/traces.
func (o Options) Address() string {
	if u := o.getenv(envTracesEndpoint); u != "" {
		return u
	}
	return strings.TrimSuffix(o.Endpoint, "/") + "/v1/traces"
}

// exporterOptions point the exporter at Address; the SDK reads the traces endpoint
// variable itself, but the OTLP endpoint may come from the configuration file.
func (o Options) exporterOptions() []otlptracehttp.Option {
	if o.getenv(envTracesEndpoint) != "" {
		return nil
	}
	return []otlptracehttp.Option{otlptracehttp.WithEndpointURL(o.Address())}
}

// Probe sends the collector an export with no spans, as the exporter sends spans (its
// headers, TLS and timeout from the OTEL_* variables), once, without retrying: nil when
// the collector took it. doctor uses it.
func Probe(ctx context.Context, o Options) error {
	opts := append(o.exporterOptions(), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	client := otlptracehttp.NewClient(opts...)
	defer func() { _ = client.Stop(context.Background()) }()
	return client.UploadTraces(ctx, nil)
}
