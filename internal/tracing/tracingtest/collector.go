// Package tracingtest is a fake OpenTelemetry collector for tests: an OTLP/HTTP server
// taking /v1/traces (protobuf, plain or gzip) that records the spans it receives, and can
// be told to refuse requests (503, 429 with Retry-After) or to hold them.
package tracingtest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// MaxBody bounds a request's body, as sent and once unzipped.
const MaxBody = 16 << 20

const protobufType = "application/x-protobuf"

// Refusal is an answer the collector gives instead of taking a request.
type Refusal struct {
	Status     int    // 503, 429, …
	RetryAfter string // the Retry-After header, seconds; empty: none
}

// Collector is the fake collector. Its methods are safe for concurrent use.
type Collector struct {
	srv *httptest.Server

	mu       sync.Mutex // guards following
	received []*tracepb.ResourceSpans
	refuse   []Refusal     // the answers to the next requests, in order
	held     chan struct{} // non-nil: requests wait until it is closed
	accepted int
	refused  int
	gzipped  int           // requests taken that came gzip-compressed
	changed  chan struct{} // closed and replaced whenever a request is answered
}

// New starts a collector; Close stops it.
func New() *Collector {
	c := &Collector{changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", c.traces)
	c.srv = httptest.NewServer(mux)
	return c
}

// URL is the collector's base address (OTEL_EXPORTER_OTLP_ENDPOINT); traces go to its
// /v1/traces.
func (c *Collector) URL() string { return c.srv.URL }

// Close stops the server, releasing held requests first.
func (c *Collector) Close() {
	c.Release()
	c.srv.Close()
}

// Refuse makes the next requests be answered with rs, one each, in order.
func (c *Collector) Refuse(rs ...Refusal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse = append(c.refuse, rs...)
}

// Hold makes requests wait, unanswered, until Release: a collector that is stuck.
func (c *Collector) Hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = make(chan struct{})
	}
}

// Release answers the held requests and stops holding.
func (c *Collector) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held != nil {
		close(c.held)
		c.held = nil
	}
}

func (c *Collector) traces(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	held := c.held
	c.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	req, status, err := decode(r)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	c.mu.Lock()
	if len(c.refuse) > 0 {
		rf := c.refuse[0]
		c.refuse = c.refuse[1:]
		c.refused++
		c.notify()
		c.mu.Unlock()
		if rf.RetryAfter != "" {
			w.Header().Set("Retry-After", rf.RetryAfter)
		}
		http.Error(w, http.StatusText(rf.Status), rf.Status)
		return
	}
	c.received = append(c.received, req.GetResourceSpans()...)
	c.accepted++
	if r.Header.Get("Content-Encoding") == "gzip" {
		c.gzipped++
	}
	c.notify()
	c.mu.Unlock()
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", protobufType)
	_, _ = w.Write(body)
}

// decode reads an export request as OTLP/HTTP sends it; on failure it says the status to
// answer with.
func decode(r *http.Request) (*coltracepb.ExportTraceServiceRequest, int, error) {
	if r.Method != http.MethodPost {
		return nil, http.StatusMethodNotAllowed, fmt.Errorf("%s: only POST", r.Method)
	}
	if ct := r.Header.Get("Content-Type"); ct != protobufType {
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("content type %q: want %s", ct, protobufType)
	}
	var body io.Reader = http.MaxBytesReader(nil, r.Body, MaxBody)
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		body = io.LimitReader(zr, MaxBody+1)
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q", enc)
	}
	raw, err := io.ReadAll(body)
	switch {
	case err != nil:
		return nil, http.StatusBadRequest, err
	case len(raw) > MaxBody:
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", MaxBody)
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("not an ExportTraceServiceRequest: %w", err)
	}
	return &req, 0, nil
}

// notify wakes WaitFor; c.mu is held.
func (c *Collector) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Requests says how many export requests were taken and refused.
func (c *Collector) Requests() (accepted, refused int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.accepted, c.refused
}

// Gzipped says how many of the requests taken came gzip-compressed.
func (c *Collector) Gzipped() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gzipped
}

// ResourceSpans is everything received so far, as sent.
func (c *Collector) ResourceSpans() []*tracepb.ResourceSpans {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.ResourceSpans(nil), c.received...)
}

// Spans is every span received so far, flattened.
func (c *Collector) Spans() []Span {
	var out []Span
	for _, rs := range c.ResourceSpans() {
		res := attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				out = append(out, spanOf(s, res))
			}
		}
	}
	return out
}

// WaitFor waits until ok holds of the spans received, or ctx ends.
func (c *Collector) WaitFor(ctx context.Context, ok func([]Span) bool) error {
	for {
		c.mu.Lock()
		changed := c.changed
		c.mu.Unlock()
		if ok(c.Spans()) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("collector: %w", ctx.Err())
		}
	}
}

// Span is a received span in a form tests compare easily.
type Span struct {
	Name                      string
	TraceID, SpanID, ParentID string // hex; ParentID empty for a root
	Start, End                time.Time
	Attrs                     map[string]any
	Events                    []Event
	StatusCode                tracepb.Status_StatusCode
	StatusMessage             string
	Resource                  map[string]any
}

// Duration is how long the span lasted.
func (s Span) Duration() time.Duration { return s.End.Sub(s.Start) }

// Event is a span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs map[string]any
}

func spanOf(s *tracepb.Span, res map[string]any) Span {
	out := Span{
		Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
		ParentID: hex.EncodeToString(s.GetParentSpanId()),
		Start:    time.Unix(0, int64(s.GetStartTimeUnixNano())).UTC(),
		End:      time.Unix(0, int64(s.GetEndTimeUnixNano())).UTC(),
		Attrs:    attributes(s.GetAttributes()), StatusCode: s.GetStatus().GetCode(), StatusMessage: s.GetStatus().GetMessage(),
		Resource: res,
	}
	for _, e := range s.GetEvents() {
		out.Events = append(out.Events, Event{Name: e.GetName(), Time: time.Unix(0, int64(e.GetTimeUnixNano())).UTC(), Attrs: attributes(e.GetAttributes())})
	}
	return out
}

// attributes reads OTLP attributes as Go values: string, bool, int64 or float64.
func attributes(kvs []*commonpb.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = v.BoolValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = v.DoubleValue
		default:
			out[kv.GetKey()] = kv.GetValue().String()
		}
	}
	return out
}
