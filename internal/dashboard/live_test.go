package dashboard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/edge"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// sseMessage is one server-sent event.
type sseMessage struct {
	event string
	data  string
}

// sseReader reads a stream's events in order, comments (heartbeats) skipped.
type sseReader struct {
	r    *bufio.Reader
	resp *http.Response
}

func (h *harness) openStream(t *testing.T, path string) *sseReader {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+viewerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream %s: %s", path, resp.Status)
	}
	return &sseReader{r: bufio.NewReader(resp.Body), resp: resp}
}

// next reads the next event; ok is false at the end of the stream.
func (s *sseReader) next(t *testing.T) (sseMessage, bool) {
	t.Helper()
	var m sseMessage
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return m, false
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && m.event != "":
			return m, true
		case strings.HasPrefix(line, "event: "):
			m.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			m.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func readEvents(t *testing.T, name string) []obs.Event {
	t.Helper()
	events, err := obs.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func liveHarness(t *testing.T) (*harness, *Live) {
	live := NewLive()
	h := newHarness(t, &fakeSource{calls: []store.Call{{ID: "c_live", Direction: voice.Inbound, From: "+15550102000", CallerHash: "ch_alice",
		StartedAt: time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)}}}, func(o *Options) { o.Live = live })
	return h, live
}

func TestLiveStreamCatchesUpThenFollowsInOrder(t *testing.T) {
	h, live := liveHarness(t)
	events := readEvents(t, "healthy.jsonl")
	tee := live.Observe("c_live")
	const before = 4 // events a page opened mid-call has missed: the caller is speaking
	for _, e := range events[:before] {
		tee(e)
	}
	c := h.signIn(t, viewerToken)
	if _, body := h.get(t, c, "/dashboard/calls/c_live"); !strings.Contains(body, `data-stream="/dashboard/calls/c_live/events"`) ||
		!strings.Contains(body, `id="live-state">caller speaking<`) {
		t.Fatalf("the call page has no live section in the caller's turn")
	}
	if _, body := h.get(t, c, "/dashboard/live"); !strings.Contains(body, `data-call="c_live"`) || !strings.Contains(body, "ch_alice") {
		t.Fatalf("the live page does not list the call")
	}
	stream := h.openStream(t, "/dashboard/calls/c_live/events")
	list := h.openStream(t, "/dashboard/live/events")
	if m, _ := stream.next(t); m.event != "hello" {
		t.Fatalf("first message %+v", m)
	}
	if m, _ := list.next(t); m.event != "hello" {
		t.Fatalf("the list's first message %+v", m)
	}
	go func() {
		for _, e := range events[before:] {
			tee(e)
		}
	}()
	want := map[string]string{obs.VADSpeechStart: StateCallerSpeaking, obs.TurnCommit: StateThinking,
		obs.PlayoutFirstAudio: StateSpeaking, obs.PlayoutDone: StateListening, obs.CallEnd: StateEnded}
	for i, e := range events {
		if i < before && e.Type == obs.STTPartial {
			continue // not kept for late pages
		}
		m, ok := stream.next(t)
		var got liveEvent
		if !ok || m.event != "journal" || json.Unmarshal([]byte(m.data), &got) != nil {
			t.Fatalf("event %d: %+v", i, m)
		}
		if got.Event.Type != e.Type || got.Event.MS != e.MS || got.Event.Text != e.Text || got.Call != "c_live" {
			t.Fatalf("event %d is %s at %d ms, want %s at %d", i, got.Event.Type, got.Event.MS, e.Type, e.MS)
		}
		if s, ok := want[e.Type]; ok && got.State != s {
			t.Errorf("after %s (event %d) the state is %q, want %q", e.Type, i, got.State, s)
		}
		if got.Event.TurnConfig != nil {
			t.Errorf("the turn configuration went to the page")
		}
	}
	if m, ok := stream.next(t); m.event != "end" || !ok {
		t.Fatalf("after call.end: %+v", m)
	}
	if m, ok := stream.next(t); ok {
		t.Fatalf("the stream goes on after the end: %+v", m)
	}
	// The list stream saw, after its hello (none of the backlog), the turns, replies, state
	// changes and the end.
	state := StateCallerSpeaking
	for i, e := range events[before:] {
		s := next(state, e)
		if s == state && !listed[e.Type] {
			continue
		}
		state = s
		m, _ := list.next(t)
		if !strings.Contains(m.data, `"type":"`+e.Type+`"`) || !strings.Contains(m.data, `"state":"`+s+`"`) {
			t.Fatalf("list event %d: %+v, want %s in state %s", i, m, e.Type, s)
		}
	}
	tee(obs.Event{Type: obs.Clear, MS: 99999}) // a straggler after the end
	if _, ok := live.State("c_live"); ok {
		t.Errorf("the hub still follows the ended call")
	}
	if resp, _ := h.get(t, c, "/dashboard/calls/c_live/events", "Accept", "text/event-stream"); resp.StatusCode != http.StatusNoContent {
		t.Errorf("a stream of an ended call: %s", resp.Status)
	}
}

// stalledWriter is a ResponseWriter whose first write blocks until released: a page
// that stopped reading.
type stalledWriter struct {
	header  http.Header
	writing chan struct{} // closed at the first write
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *stalledWriter) Header() http.Header { return w.header }
func (w *stalledWriter) WriteHeader(int)     {}
func (w *stalledWriter) Flush()              {}
func (w *stalledWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.writing) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func TestAStuckPageNeverBlocksTheCallAndIsTold(t *testing.T) {
	h, live := liveHarness(t)
	tee := live.Observe("c_live")
	tee(obs.Event{Type: obs.CallStart})
	w := &stalledWriter{header: http.Header{}, writing: make(chan struct{}), release: make(chan struct{})}
	req := httptest.NewRequest(http.MethodGet, "/dashboard/calls/c_live/events", nil)
	done := make(chan struct{})
	go func() { defer close(done); h.dash.stream(w, req, "c_live") }()
	<-w.writing // subscribed, and stuck writing its hello
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		for i := range 3 * subscriberBuf {
			tee(obs.Event{Type: obs.STTPartial, MS: int64(i), Text: "words"})
		}
	}()
	select {
	case <-observed:
	case <-time.After(30 * time.Second):
		t.Fatal("Observe blocked on a stuck page")
	}
	close(w.release)
	<-done
	out := w.buf.String()
	if !strings.Contains(out, "event: lost") {
		t.Fatalf("the stuck page was not told it lost events:\n%s", out[max(0, len(out)-300):])
	}
	if n := strings.Count(out, "event: journal"); n > subscriberBuf+1 { // its queue, and the backlog's call.start
		t.Errorf("%d events queued for a page, more than its %d", n, subscriberBuf)
	}
	if st, _ := live.State("c_live"); st != StateListening {
		t.Errorf("the call's state: %q", st)
	}
}

func TestLiveFollowersAreBounded(t *testing.T) {
	h, live := liveHarness(t)
	live.Observe("c_live")(obs.Event{Type: obs.CallStart})
	for range maxSubsPerCall {
		if _, _, _, err := live.subscribe("c_live"); err != nil {
			t.Fatal(err)
		}
	}
	resp, _ := h.get(t, browser(t), "/dashboard/calls/c_live/events", "Authorization", "Bearer "+adminToken)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("one page too many: %s", resp.Status)
	}
	for range maxSubsTotal - maxSubsPerCall {
		if _, _, _, err := live.subscribe(""); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, err := live.subscribe(""); err == nil {
		t.Errorf("the total is not bounded")
	}
}

// An event stream outlives the server's read and write timeouts.
func TestStreamsOutliveServerTimeouts(t *testing.T) {
	if testing.Short() {
		t.Skip("waits past the server's timeouts")
	}
	live := NewLive()
	d := New(Options{Source: &fakeSource{}, AdminToken: adminToken, Live: live})
	mux := http.NewServeMux()
	d.Register(mux)
	const timeout = 300 * time.Millisecond
	hs := edge.Server(mux, edge.Timeouts{ReadHeader: timeout, Read: timeout, Write: timeout, Idle: timeout}, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	tee := live.Observe("c_long")
	tee(obs.Event{Type: obs.CallStart})
	h := &harness{srv: &httptest.Server{URL: "http://" + ln.Addr().String()}}
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/dashboard/calls/c_long/events", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s := &sseReader{r: bufio.NewReader(resp.Body), resp: resp}
	if m, _ := s.next(t); m.event != "hello" {
		t.Fatalf("first message %+v", m)
	}
	if m, _ := s.next(t); !strings.Contains(m.data, `"type":"call.start"`) {
		t.Fatalf("the backlog: %+v", m)
	}
	time.Sleep(4 * timeout) // past both deadlines the server set
	tee(obs.Event{Type: obs.TurnCommit, Turn: 1, Text: "still here"})
	if m, ok := s.next(t); !ok || !strings.Contains(m.data, "still here") {
		t.Fatalf("after the server's timeouts: %+v, %v", m, ok)
	}
}

func TestIdleStreamsGetHeartbeats(t *testing.T) {
	saved := heartbeat
	heartbeat = 20 * time.Millisecond
	t.Cleanup(func() { heartbeat = saved })
	h, live := liveHarness(t)
	live.Observe("c_live")(obs.Event{Type: obs.CallStart})
	s := h.openStream(t, "/dashboard/calls/c_live/events")
	beats := 0
	for beats < 3 {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, ":") {
			beats++
		}
	}
}

// A page opened late in a long call gets the call's last liveBacklog events, oldest
// first, partials left out.
func TestBacklogKeepsTheNewestEventsInOrder(t *testing.T) {
	live := NewLive()
	const id = voice.CallID("c_long")
	live.record(id, obs.Event{Type: obs.CallStart})
	for i := range 2*liveBacklog + 7 {
		live.record(id, obs.Event{Type: obs.TurnCommit, Turn: i})
		live.record(id, obs.Event{Type: obs.STTPartial, Turn: i})
	}
	sub, backlog, ok, err := live.subscribe(id)
	if err != nil || !ok {
		t.Fatalf("subscribe: ok %v, err %v", ok, err)
	}
	defer live.unsubscribe(id, sub)
	if len(backlog) != liveBacklog {
		t.Fatalf("backlog of %d events, want %d", len(backlog), liveBacklog)
	}
	for i, ev := range backlog {
		if want := liveBacklog + 7 + i; ev.Event.Type != obs.TurnCommit || ev.Event.Turn != want {
			t.Fatalf("backlog[%d] is %s turn %d, want turn.commit turn %d", i, ev.Event.Type, ev.Event.Turn, want)
		}
	}
}
