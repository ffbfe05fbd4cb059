package tracingtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func post(t *testing.T, c *Collector, contentType, encoding string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.URL()+"/v1/traces", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func oneSpan(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			Name: name, TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8),
			StartTimeUnixNano: 1_000_000_000, EndTimeUnixNano: 1_250_000_000,
			Attributes: []*commonpb.KeyValue{{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 7}}}},
		}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestTakesPlainAndGzip: a request, plain or gzip, is answered 200 with an
// ExportTraceServiceResponse, and its span recorded as sent.
func TestTakesPlainAndGzip(t *testing.T) {
	c := New()
	defer c.Close()
	if resp := post(t, c, protobufType, "", oneSpan(t, "plain")); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != protobufType {
		t.Fatalf("plain: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	} else {
		body, _ := io.ReadAll(resp.Body)
		if err := proto.Unmarshal(body, &coltracepb.ExportTraceServiceResponse{}); err != nil {
			t.Errorf("the answer is not an ExportTraceServiceResponse: %v", err)
		}
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(oneSpan(t, "zipped"))
	_ = zw.Close()
	if resp := post(t, c, protobufType, "gzip", zipped.Bytes()); resp.StatusCode != http.StatusOK {
		t.Fatalf("gzip: %s", resp.Status)
	}
	if c.Gzipped() != 1 {
		t.Errorf("gzipped requests: %d, want 1", c.Gzipped())
	}
	spans := c.Spans()
	if len(spans) != 2 || spans[0].Name != "plain" || spans[1].Name != "zipped" {
		t.Fatalf("spans %+v", spans)
	}
	if s := spans[0]; s.Duration() != 250*time.Millisecond || s.Attrs["n"] != int64(7) || s.ParentID != "" {
		t.Errorf("span read back as %+v", s)
	}
}

// TestRefusesWhatIsNotOTLP: another content type, an unknown encoding, a body that is not
// the message, or a bad gzip stream is refused with the status OTLP/HTTP gives it, and
// nothing is recorded.
func TestRefusesWhatIsNotOTLP(t *testing.T) {
	c := New()
	defer c.Close()
	for _, tc := range []struct {
		name, contentType, encoding string
		body                        []byte
		want                        int
	}{
		{"JSON", "application/json", "", []byte(`{}`), http.StatusUnsupportedMediaType},
		{"brotli", protobufType, "br", oneSpan(t, "x"), http.StatusUnsupportedMediaType},
		{"garbage", protobufType, "", []byte{0xff, 0xff, 0xff}, http.StatusBadRequest},
		{"bad gzip", protobufType, "gzip", []byte("not gzip"), http.StatusBadRequest},
	} {
		if resp := post(t, c, tc.contentType, tc.encoding, tc.body); resp.StatusCode != tc.want {
			t.Errorf("%s: %s, want %d", tc.name, resp.Status, tc.want)
		}
	}
	if n := len(c.Spans()); n != 0 {
		t.Errorf("%d spans recorded from refused requests", n)
	}
}

// TestRefusalsAndHold: told to, it answers 429 with Retry-After, then takes requests
// again; a held request is answered only on Release.
func TestRefusalsAndHold(t *testing.T) {
	c := New()
	defer c.Close()
	c.Refuse(Refusal{Status: http.StatusTooManyRequests, RetryAfter: "3"})
	resp := post(t, c, protobufType, "", oneSpan(t, "a"))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("refusal: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	c.Hold()
	answered := make(chan int, 1)
	held := oneSpan(t, "b")
	go func() {
		req, _ := http.NewRequest(http.MethodPost, c.URL()+"/v1/traces", bytes.NewReader(held))
		req.Header.Set("Content-Type", protobufType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		_ = resp.Body.Close()
		answered <- resp.StatusCode
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := c.WaitFor(ctx, func(s []Span) bool { return len(s) > 0 }); err == nil {
		t.Fatal("a held request was recorded")
	}
	c.Release()
	if status := <-answered; status != http.StatusOK {
		t.Errorf("released request: %d", status)
	}
	if accepted, refused := c.Requests(); accepted != 1 || refused != 1 {
		t.Errorf("requests: %d accepted, %d refused; want 1 and 1", accepted, refused)
	}
}
