package cli

import (
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/tracing/tracingtest"
)

// TestDoctorTracing: with OTEL_EXPORTER_OTLP_ENDPOINT set, doctor checks the collector
// takes an export; one that is not there is a warning (calls go on without it); unset,
// there is no such check.
func TestDoctorTracing(t *testing.T) {
	r := newDocRig(t)
	_, rep := r.report(nil)
	for _, res := range rep.Results {
		if res.Section == secTracing {
			t.Errorf("a tracing check with no endpoint: %+v", res)
		}
	}
	col := tracingtest.New()
	defer col.Close()
	r.expect([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.URL()}, 0, secTracing, "collector", doctor.OK, "")
	if accepted, _ := col.Requests(); accepted == 0 {
		t.Error("the collector saw no export")
	}
	gone := tracingtest.New()
	gone.Close()
	res := r.expect([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + gone.URL()}, 0, secTracing, "collector", doctor.Warn, "OTEL_EXPORTER_OTLP_ENDPOINT")
	if want := "connection refused"; !strings.Contains(res.Detail, want) {
		t.Errorf("detail %q does not say %q", res.Detail, want)
	}
}
