package telnyx

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/carrier/mediastream"
	"github.com/handset-voice/handset/internal/voice"
)

// wait bounds every event-driven wait: generous, since it only matters when a test fails.
const wait = 10 * time.Second

// sink records what a leg delivers and wakes waiters on every change.
type sink struct {
	mu        sync.Mutex
	changed   chan struct{}
	audio     [][]byte
	marks     []string
	digits    []string
	malformed []error
}

func newSink() *sink { return &sink{changed: make(chan struct{}, 1)} }

func (s *sink) note() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *sink) Audio(f []byte) {
	s.mu.Lock()
	s.audio = append(s.audio, append([]byte(nil), f...))
	s.mu.Unlock()
	s.note()
}

func (s *sink) Mark(name string) {
	s.mu.Lock()
	s.marks = append(s.marks, name)
	s.mu.Unlock()
	s.note()
}

func (s *sink) DTMF(d string) {
	s.mu.Lock()
	s.digits = append(s.digits, d)
	s.mu.Unlock()
	s.note()
}

func (s *sink) Malformed(err error) {
	s.mu.Lock()
	s.malformed = append(s.malformed, err)
	s.mu.Unlock()
	s.note()
}

// waitFor blocks until cond holds (under the sink's lock).
func (s *sink) waitFor(t *testing.T, what string, cond func(*sink) bool) {
	t.Helper()
	deadline := time.After(wait)
	for {
		s.mu.Lock()
		ok := cond(s)
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.changed:
		case <-deadline:
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("timed out waiting for %s: audio %d frames, marks %v, digits %v, malformed %v", what, len(s.audio), s.marks, s.digits, s.malformed)
		}
	}
}

// streamRig is a rig served over HTTP, so Telnyx's side of the media stream can dial it.
type streamRig struct {
	*rig
	srv  *httptest.Server
	legs chan voice.Leg
}

func newStreamRig(t *testing.T, tweak func(*Options)) *streamRig {
	t.Helper()
	s := &streamRig{legs: make(chan voice.Leg, 4)}
	var mux http.Handler
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mux.ServeHTTP(w, r) }))
	t.Cleanup(s.srv.Close)
	s.rig = newRig(t, func(o *Options) {
		o.PublicURL = s.srv.URL
		o.Admit = func(l voice.Leg) (<-chan struct{}, error) {
			s.legs <- l
			return make(chan struct{}), nil
		}
		if tweak != nil {
			tweak(o)
		}
	})
	mux = s.mux
	return s
}

// answer rings call ccid in and returns the stream URL Handset's answer gave.
func (s *streamRig) answer(t *testing.T, ccid string) string {
	t.Helper()
	if w := s.post(eventBody("ev-"+ccid, EventCallInitiated, inboundCall(ccid))); w.Code != http.StatusOK {
		t.Fatalf("answer: status %d %s", w.Code, w.Body)
	}
	for _, c := range s.sent() {
		if c.ccid == ccid && c.action == "answer" {
			return c.body["stream_url"].(string)
		}
	}
	t.Fatalf("no answer for %s", ccid)
	return ""
}

// telnyxSide is Telnyx's end of a media stream, written from Telnyx's documentation.
type telnyxSide struct {
	t    *testing.T
	conn *websocket.Conn
	seq  int
}

func dialStream(t *testing.T, streamURL string) (*telnyxSide, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, streamURL, nil)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { conn.CloseNow() })
	return &telnyxSide{t: t, conn: conn}, resp, nil
}

func (p *telnyxSide) send(msg string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := p.conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		p.t.Fatalf("send %.60s: %v", msg, err)
	}
}

func (p *telnyxSide) next() string {
	p.seq++
	return fmt.Sprintf(`"%d"`, p.seq)
}

func (p *telnyxSide) start(ccid, encoding string, rate int) {
	p.send(`{"event":"connected","version":"1.0.0"}`)
	p.send(`{"event":"start","sequence_number":` + p.next() + `,"stream_id":"s1","start":{"user_id":"u1","call_control_id":"` + ccid +
		`","client_state":null,"from":"+15550001111","to":"+15550002222","media_format":{"encoding":"` + encoding + `","sample_rate":` +
		fmt.Sprint(rate) + `,"channels":1},"custom_parameters":{}}}`)
}

func (p *telnyxSide) media(chunk int, payload []byte) {
	p.send(`{"event":"media","sequence_number":` + p.next() + `,"stream_id":"s1","media":{"track":"inbound","chunk":"` + fmt.Sprint(chunk) +
		`","timestamp":"` + fmt.Sprint(chunk*20) + `","payload":"` + base64.StdEncoding.EncodeToString(payload) + `"}}`)
}

// read reads Handset's next message.
func (p *telnyxSide) read() map[string]any {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, msg, err := p.conn.Read(ctx)
	if err != nil {
		p.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(msg, &m); err != nil {
		p.t.Fatalf("handset sent %s: %v", msg, err)
	}
	return m
}

// closed waits for Handset to close the socket and returns the close status.
func (p *telnyxSide) closed() websocket.StatusCode {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		if _, _, err := p.conn.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func (s *streamRig) leg(t *testing.T) voice.Leg {
	t.Helper()
	select {
	case l := <-s.legs:
		return l
	case <-time.After(wait):
		t.Fatal("no call admitted")
		return nil
	}
}

// run runs leg on a sink until it ends; the returned channel gives Run's error.
func run(leg voice.Leg, s *sink) <-chan error {
	done := make(chan error, 1)
	go func() { done <- leg.Run(context.Background(), s) }()
	return done
}

func frame(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

func TestStreamCarriesTheCall(t *testing.T) {
	s := newStreamRig(t, nil)
	tx, _, err := dialStream(t, s.answer(t, "v3:call1"))
	if err != nil {
		t.Fatal(err)
	}
	tx.start("v3:call1", "PCMU", 8000)
	leg := s.leg(t)
	info := leg.Info()
	if info.Carrier != Name || info.CarrierRef != "v3:call1" || info.From != "+15550001111" || info.Direction != voice.Inbound || info.CallID == "" {
		t.Errorf("info %+v", info)
	}
	rec := newSink()
	done := run(leg, rec)
	tx.media(1, frame(160, 1))
	tx.send(`{"event":"dtmf","sequence_number":` + tx.next() + `,"dtmf":{"digit":"5"}}`)
	tx.media(2, frame(160, 2))
	rec.waitFor(t, "audio and a digit", func(s *sink) bool { return len(s.audio) == 2 && len(s.digits) == 1 })

	ctx := context.Background()
	if err := leg.SendAudio(ctx, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if m := tx.read(); m["event"] != "media" || m["media"].(map[string]any)["payload"] != base64.StdEncoding.EncodeToString([]byte{1, 2, 3}) || m["stream_id"] != nil {
		t.Errorf("media sent %v", m)
	}
	if err := leg.SendMark(ctx, "t1-s1"); err != nil {
		t.Fatal(err)
	}
	if m := tx.read(); m["event"] != "mark" || m["mark"].(map[string]any)["name"] != "t1-s1" {
		t.Errorf("mark sent %v", m)
	}
	tx.send(`{"event":"mark","sequence_number":` + tx.next() + `,"mark":{"name":"t1-s1"}}`)
	rec.waitFor(t, "the mark's echo", func(s *sink) bool { return len(s.marks) == 1 })
	tx.send(`{"event":"error","payload":{"code":100002,"title":"unknown_error","detail":"x"}}`)
	rec.waitFor(t, "the error counted", func(s *sink) bool { return len(s.malformed) == 1 })
	tx.send(`{"event":"stop","sequence_number":` + tx.next() + `,"stop":{"call_control_id":"v3:call1"}}`)
	if code := tx.closed(); code != websocket.StatusNormalClosure {
		t.Errorf("Handset closed with %v after stop", code)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v after stop", err)
		}
	case <-time.After(wait):
		t.Fatal("stop did not end the call")
	}
}

func TestCloseEndsTheCall(t *testing.T) {
	s := newStreamRig(t, nil)
	tx, _, err := dialStream(t, s.answer(t, "v3:call1"))
	if err != nil {
		t.Fatal(err)
	}
	tx.start("v3:call1", "PCMU", 8000)
	done := run(s.leg(t), newSink())
	tx.conn.Close(websocket.StatusNormalClosure, "bye")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(wait):
		t.Fatal("a close did not end the call")
	}
}

// TestMediaFramesOutOfOrder: frames shuffled within the window arrive in order, a duplicate
// is dropped, and a lost frame is given up once the window fills.
func TestMediaFramesOutOfOrder(t *testing.T) {
	s := newStreamRig(t, nil)
	tx, _, err := dialStream(t, s.answer(t, "v3:call1"))
	if err != nil {
		t.Fatal(err)
	}
	tx.start("v3:call1", "PCMU", 8000)
	rec := newSink()
	run(s.leg(t), rec)
	for _, chunk := range []int{1, 3, 2, 4, 4, 6, 7, 8, 9} { // 5 is lost
		tx.media(chunk, frame(160, byte(chunk)))
	}
	rec.waitFor(t, "eight frames", func(s *sink) bool { return len(s.audio) >= 8 })
	var got []byte
	rec.mu.Lock()
	for _, f := range rec.audio {
		got = append(got, f[0])
	}
	rec.mu.Unlock()
	if want := []byte{1, 2, 3, 4, 6, 7, 8, 9}; !bytes.Equal(got, want) {
		t.Fatalf("frames in order %v, want %v", got, want)
	}
}

// TestPayloadSizesOtherThan160 over the socket: each size arrives whole.
func TestPayloadSizesOtherThan160OverTheSocket(t *testing.T) {
	s := newStreamRig(t, nil)
	tx, _, err := dialStream(t, s.answer(t, "v3:call1"))
	if err != nil {
		t.Fatal(err)
	}
	tx.start("v3:call1", "PCMU", 8000)
	rec := newSink()
	run(s.leg(t), rec)
	sizes := []int{240, 480, 8000, 161}
	for i, n := range sizes {
		tx.media(i+1, frame(n, byte(i)))
	}
	rec.waitFor(t, "every frame", func(s *sink) bool { return len(s.audio) == len(sizes) })
	for i, f := range rec.audio {
		if len(f) != sizes[i] {
			t.Errorf("frame %d: %d bytes, want %d", i, len(f), sizes[i])
		}
	}
}

// TestEventsBeforeStart: media and DTMF sent before start reach the call once it runs;
// anything else counts as malformed; too many refuse the stream.
func TestEventsBeforeStart(t *testing.T) {
	s := newStreamRig(t, nil)
	tx, _, err := dialStream(t, s.answer(t, "v3:call1"))
	if err != nil {
		t.Fatal(err)
	}
	tx.send(`{"event":"connected","version":"1.0.0"}`)
	tx.media(1, frame(160, 7))
	tx.send(`{"event":"dtmf","dtmf":{"digit":"9"}}`)
	tx.send(`{"event":"mark","mark":{"name":"early"}}`)
	tx.start("v3:call1", "PCMU", 8000)
	rec := newSink()
	run(s.leg(t), rec)
	rec.waitFor(t, "the early frames", func(s *sink) bool {
		return len(s.audio) == 1 && len(s.digits) == 1 && len(s.malformed) == 1
	})

	s2 := newStreamRig(t, nil)
	tx2, _, err := dialStream(t, s2.answer(t, "v3:call2"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for i := 0; i <= mediastream.MaxEarlyFrames+1; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			err := tx2.conn.Write(ctx, websocket.MessageText, []byte(`{"event":"dtmf","dtmf":{"digit":"1"}}`))
			cancel()
			if err != nil {
				return
			}
		}
	}()
	if code := tx2.closed(); code != websocket.StatusPolicyViolation {
		t.Fatalf("close status %v, want policy violation", code)
	}
}

// TestMarksOnClear: whether or not Telnyx echoes the marks a clear dropped, the call hears
// each mark exactly once, in order.
func TestMarksOnClear(t *testing.T) {
	for _, echo := range []bool{false, true} {
		t.Run(fmt.Sprintf("echo=%v", echo), func(t *testing.T) {
			s := newStreamRig(t, nil)
			tx, _, err := dialStream(t, s.answer(t, "v3:call1"))
			if err != nil {
				t.Fatal(err)
			}
			tx.start("v3:call1", "PCMU", 8000)
			leg := s.leg(t)
			rec := newSink()
			run(leg, rec)
			ctx := context.Background()
			for _, name := range []string{"m1", "m2", "m3"} {
				if err := leg.SendMark(ctx, name); err != nil {
					t.Fatal(err)
				}
				tx.read()
			}
			tx.send(`{"event":"mark","mark":{"name":"m1"}}`)
			rec.waitFor(t, "m1", func(s *sink) bool { return len(s.marks) == 1 })
			if err := leg.Clear(ctx); err != nil {
				t.Fatal(err)
			}
			if m := tx.read(); m["event"] != "clear" {
				t.Fatalf("sent %v, want clear", m)
			}
			if echo {
				tx.send(`{"event":"mark","mark":{"name":"m2"}}`)
				tx.send(`{"event":"mark","mark":{"name":"m3"}}`)
			}
			tx.send(`{"event":"dtmf","dtmf":{"digit":"1"}}`) // a marker: everything before it was read
			rec.waitFor(t, "the marker", func(s *sink) bool { return len(s.digits) == 1 })
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if got := strings.Join(rec.marks, ","); got != "m1,m2,m3" {
				t.Errorf("marks %s, want m1,m2,m3", got)
			}
			if len(rec.malformed) != 0 {
				t.Errorf("malformed %v", rec.malformed)
			}
		})
	}
}

func TestStreamRefusals(t *testing.T) {
	t.Run("without a token", func(t *testing.T) {
		s := newStreamRig(t, nil)
		u := strings.Replace(s.srv.URL, "http", "ws", 1) + StreamPath
		if _, resp, err := dialStream(t, u); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("dial without a token: %v %v", resp, err)
		}
	})
	t.Run("another call's token", func(t *testing.T) {
		s := newStreamRig(t, nil)
		u := s.answer(t, "v3:call1")
		s.answer(t, "v3:call2")
		tx, _, err := dialStream(t, u)
		if err != nil {
			t.Fatal(err)
		}
		tx.start("v3:call2", "PCMU", 8000)
		if code := tx.closed(); code != websocket.StatusPolicyViolation {
			t.Fatalf("close %v", code)
		}
	})
	t.Run("reused token", func(t *testing.T) {
		s := newStreamRig(t, nil)
		u := s.answer(t, "v3:call1")
		tx, _, err := dialStream(t, u)
		if err != nil {
			t.Fatal(err)
		}
		tx.start("v3:call1", "PCMU", 8000)
		s.leg(t)
		again, _, err := dialStream(t, u)
		if err != nil {
			t.Fatal(err)
		}
		again.start("v3:call1", "PCMU", 8000)
		if code := again.closed(); code != websocket.StatusPolicyViolation {
			t.Fatalf("close %v", code)
		}
	})
	t.Run("another codec", func(t *testing.T) {
		s := newStreamRig(t, nil)
		tx, _, err := dialStream(t, s.answer(t, "v3:call1"))
		if err != nil {
			t.Fatal(err)
		}
		tx.start("v3:call1", "OPUS", 16000)
		if code := tx.closed(); code != websocket.StatusPolicyViolation {
			t.Fatalf("close %v", code)
		}
	})
}

// TestTokenKeyIsNotThePublicKey: the public key is public; a token signed with a key
// derived from it opens nothing.
func TestTokenKeyIsNotThePublicKey(t *testing.T) {
	s := newStreamRig(t, nil)
	s.answer(t, "v3:call1")
	forged, err := mediastream.NewTokens(base64.StdEncoding.EncodeToString(s.c.opts.PublicKey), Name, mediastream.EncodingJSON).
		Mint(mediastream.Claims{CallRef: "v3:call1", From: "+1", To: "+2", Direction: "inbound"}, s.now)
	if err != nil {
		t.Fatal(err)
	}
	u := strings.Replace(s.srv.URL, "http", "ws", 1) + StreamPath + "?" + TokenParameter + "=" + url.QueryEscape(forged)
	tx, _, err := dialStream(t, u)
	if err != nil {
		t.Fatal(err)
	}
	tx.start("v3:call1", "PCMU", 8000)
	if code := tx.closed(); code != websocket.StatusPolicyViolation {
		t.Fatalf("close %v", code)
	}
}

// TestStreamOpensBeforeTheAnswerReturns: Telnyx may dial the stream while Handset's answer
// command is still in flight; the answer was remembered first, so the stream is taken.
func TestStreamOpensBeforeTheAnswerReturns(t *testing.T) {
	s := newStreamRig(t, nil)
	opened := make(chan error, 1)
	s.onSend = func(c sentCommand) {
		tx, _, err := dialStream(t, c.body["stream_url"].(string))
		if err != nil {
			opened <- err
			return
		}
		tx.start(c.ccid, "PCMU", 8000)
		select {
		case <-s.legs:
			opened <- nil
		case <-time.After(wait):
			opened <- errors.New("the stream was not admitted while the answer was in flight")
		}
	}
	if w := s.post(eventBody("e1", EventCallInitiated, inboundCall("v3:call1"))); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
}

// TestL16StreamIsLittleEndianInside: over the socket, L16 comes big-endian and reaches the
// call little-endian; what the call sends leaves big-endian.
func TestL16StreamIsLittleEndianInside(t *testing.T) {
	s := newStreamRig(t, func(o *Options) { o.Codec = CodecL16 })
	tx, _, err := dialStream(t, s.answer(t, "v3:call1"))
	if err != nil {
		t.Fatal(err)
	}
	tx.start("v3:call1", "L16", 16000)
	leg := s.leg(t)
	if f := leg.Info().Format; f.Rate != 16000 || f.Encoding.BytesPerSample() != 2 {
		t.Fatalf("format %v", f)
	}
	rec := newSink()
	run(leg, rec)
	tx.media(1, []byte{0x12, 0x34, 0x56, 0x78})
	rec.waitFor(t, "audio", func(s *sink) bool { return len(s.audio) == 1 })
	if got := rec.audio[0]; !bytes.Equal(got, []byte{0x34, 0x12, 0x78, 0x56}) {
		t.Errorf("call got %x", got)
	}
	if err := leg.SendAudio(context.Background(), []byte{0x34, 0x12}); err != nil {
		t.Fatal(err)
	}
	m := tx.read()
	if p, _ := base64.StdEncoding.DecodeString(m["media"].(map[string]any)["payload"].(string)); !bytes.Equal(p, []byte{0x12, 0x34}) {
		t.Errorf("sent %x", p)
	}
}
