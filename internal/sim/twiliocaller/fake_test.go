package twiliocaller

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio/g711"
)

// A small fake Handset: it checks the webhook and upgrade signatures the way Handset must,
// answers TwiML with per-call one-time tokens in <Parameter>, accepts the stream, checks
// connected and start, and hands each accepted stream to the test to drive.

const (
	testAuthToken  = "test-auth-token-0123456789"
	testAccountSid = "AC0123456789abcdef0123456789abcdef"
	publicBase     = "https://handset.example"
	publicStream   = "wss://handset.example/twilio/stream"
)

var (
	callSidRE    = regexp.MustCompile(`^CA[0-9a-f]{32}$`)
	accountSidRE = regexp.MustCompile(`^AC[0-9a-f]{32}$`)
	streamSidRE  = regexp.MustCompile(`^MZ[0-9a-f]{32}$`)
)

// independentSignature is the test's own reading of Twilio's signing rule, written apart
// from the package's Signature: URL, then name+value pairs sorted by name, HMAC-SHA1,
// base64.
func independentSignature(token, fullURL string, form url.Values) string {
	var names []string
	for name := range form {
		names = append(names, name)
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString(fullURL)
	for _, name := range names {
		sb.WriteString(name)
		sb.WriteString(form.Get(name))
	}
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(sb.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

type fakeHandset struct {
	srv *httptest.Server

	streams chan *fakeStream // every stream that passed start, in order

	mu            sync.Mutex
	webhookStatus int    // when set, the webhook answers this status with webhookBody
	webhookBody   string //
	streamURL     string // the <Stream url>; default publicStream
	errs          []string
	tokens        map[string]bool // issued and not yet used
	webhooks      []url.Values
	handlers      sync.WaitGroup
}

func newFakeHandset(t *testing.T) *fakeHandset {
	t.Helper()
	f := &fakeHandset{
		streams:   make(chan *fakeStream, 16),
		tokens:    map[string]bool{},
		streamURL: publicStream,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /twilio/voice", f.serveVoice)
	mux.HandleFunc("GET /twilio/stream", f.serveStream)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.srv.Close()
		f.handlers.Wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, e := range f.errs {
			t.Errorf("fake handset: %s", e)
		}
	})
	return f
}

func (f *fakeHandset) errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// options dials the fake the way Handset is deployed: it believes its public URL is
// https://handset.example while the simulator connects to the loopback server.
func (f *fakeHandset) options() Options {
	return Options{
		BaseURL:    f.srv.URL,
		PublicURL:  publicBase,
		AuthToken:  testAuthToken,
		AccountSid: testAccountSid,
		HTTPClient: f.srv.Client(),
	}
}

func (f *fakeHandset) serveVoice(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if got := r.Header.Get("Content-Type"); got != "application/x-www-form-urlencoded" {
		f.errorf("webhook Content-Type %q", got)
	}
	want := independentSignature(testAuthToken, publicBase+"/twilio/voice", r.PostForm)
	if !hmac.Equal([]byte(r.Header.Get(SignatureHeader)), []byte(want)) {
		http.Error(w, "forged", http.StatusForbidden)
		return
	}
	form := r.PostForm
	f.mu.Lock()
	f.webhooks = append(f.webhooks, form)
	f.mu.Unlock()
	for name, check := range map[string]func(string) bool{
		"CallSid":    callSidRE.MatchString,
		"AccountSid": accountSidRE.MatchString,
		"CallStatus": func(v string) bool { return v == "ringing" },
		"Direction":  func(v string) bool { return v == "inbound" },
		"ApiVersion": func(v string) bool { return v == "2010-04-01" },
		"From":       func(v string) bool { return strings.HasPrefix(v, "+") },
		"To":         func(v string) bool { return strings.HasPrefix(v, "+") },
		"Caller":     func(v string) bool { return v == form.Get("From") },
		"Called":     func(v string) bool { return v == form.Get("To") },
	} {
		if !check(form.Get(name)) {
			f.errorf("webhook %s = %q", name, form.Get(name))
		}
	}
	token := NewSid("tok")
	f.mu.Lock()
	status, body, streamURL := f.webhookStatus, f.webhookBody, f.streamURL
	f.tokens[token] = true
	f.mu.Unlock()
	if status != 0 {
		http.Error(w, body, status)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response>
  <Connect>
    <Stream url=%q name="handset">
      <Parameter name="token" value=%q/>
      <Parameter name="callSid" value=%q/>
    </Stream>
  </Connect>
  <Pause length="1"/>
</Response>`, streamURL, token, form.Get("CallSid"))
}

// fakeStream is one accepted stream; the test drives it.
type fakeStream struct {
	t         *testing.T
	conn      *websocket.Conn
	start     twMsg
	streamSid string
	in        chan twMsg    // messages after start, closed when the socket ends
	closeErr  error         // the read error that ended it; valid once in is closed
	ended     chan struct{} // closed with in
}

// twMsg is any Twilio → Handset message, as the fake reads it.
type twMsg struct {
	Event          string `json:"event"`
	SequenceNumber string `json:"sequenceNumber"`
	StreamSid      string `json:"streamSid"`
	Start          *struct {
		AccountSid       string            `json:"accountSid"`
		CallSid          string            `json:"callSid"`
		CustomParameters map[string]string `json:"customParameters"`
	} `json:"start"`
	Media *struct {
		Track     string `json:"track"`
		Chunk     string `json:"chunk"`
		Timestamp string `json:"timestamp"`
		Payload   string `json:"payload"`
	} `json:"media"`
	Mark *struct {
		Name string `json:"name"`
	} `json:"mark"`
	DTMF *struct {
		Track string `json:"track"`
		Digit string `json:"digit"`
	} `json:"dtmf"`
	Stop *struct {
		AccountSid string `json:"accountSid"`
		CallSid    string `json:"callSid"`
	} `json:"stop"`

	raw string
	at  time.Time // arrival, on the wall clock
}

// answer makes the webhook answer status with body instead of TwiML (status 0 restores
// TwiML), and sets the <Stream url> the TwiML carries.
func (f *fakeHandset) answer(status int, body, streamURL string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.webhookStatus, f.webhookBody, f.streamURL = status, body, streamURL
}

func (f *fakeHandset) consumeToken(token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := f.tokens[token]
	delete(f.tokens, token)
	return ok
}

func (f *fakeHandset) serveStream(w http.ResponseWriter, r *http.Request) {
	f.handlers.Add(1)
	defer f.handlers.Done()
	f.mu.Lock()
	streamURL := f.streamURL
	f.mu.Unlock()
	if !hmac.Equal([]byte(r.Header.Get(SignatureHeader)), []byte(independentSignature(testAuthToken, streamURL, nil))) {
		http.Error(w, "forged upgrade", http.StatusForbidden)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		f.errorf("accept: %v", err)
		return
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()

	_, data, err := conn.Read(ctx)
	if err != nil {
		f.errorf("read connected: %v", err)
		return
	}
	var connected map[string]any
	if err := json.Unmarshal(data, &connected); err != nil || len(connected) != 3 ||
		connected["event"] != "connected" || connected["protocol"] != "Call" || connected["version"] != "1.0.0" {
		f.errorf("connected message %s", data)
	}
	_, data, err = conn.Read(ctx)
	if err != nil {
		f.errorf("read start: %v", err)
		return
	}
	var start twMsg
	if err := json.Unmarshal(data, &start); err != nil || start.Event != "start" || start.Start == nil {
		f.errorf("start message %s", data)
		return
	}
	start.raw = string(data)
	if !f.consumeToken(start.Start.CustomParameters["token"]) {
		_ = conn.Close(websocket.StatusPolicyViolation, "bad token")
		return
	}
	fs := &fakeStream{conn: conn, start: start, streamSid: start.StreamSid, in: make(chan twMsg, 8192), ended: make(chan struct{})}
	go func() {
		defer close(fs.ended)
		defer close(fs.in)
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				fs.closeErr = err
				return
			}
			m := twMsg{raw: string(data), at: time.Now()}
			if err := json.Unmarshal(data, &m); err != nil {
				m.Event = "(not json)"
			}
			fs.in <- m
		}
	}()
	f.streams <- fs
	<-fs.ended
}

// nextStream waits for the next accepted stream.
func (f *fakeHandset) nextStream(t *testing.T) *fakeStream {
	t.Helper()
	select {
	case fs := <-f.streams:
		fs.t = t
		return fs
	case <-time.After(patience):
		t.Fatal("no stream reached the fake handset")
		return nil
	}
}

func (s *fakeStream) sendJSON(v any) {
	s.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	s.sendText(string(b))
}

func (s *fakeStream) sendText(text string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := s.conn.Write(ctx, websocket.MessageText, []byte(text)); err != nil {
		s.t.Fatalf("fake handset write: %v", err)
	}
}

func (s *fakeStream) sendMedia(mulaw []byte) {
	s.t.Helper()
	s.sendJSON(map[string]any{"event": "media", "streamSid": s.streamSid, "media": map[string]string{"payload": base64.StdEncoding.EncodeToString(mulaw)}})
}

func (s *fakeStream) sendMark(name string) {
	s.t.Helper()
	s.sendJSON(map[string]any{"event": "mark", "streamSid": s.streamSid, "mark": map[string]string{"name": name}})
}

func (s *fakeStream) sendClear() {
	s.t.Helper()
	s.sendJSON(map[string]any{"event": "clear", "streamSid": s.streamSid})
}

// next returns the next message from the caller, failing the test after a timeout.
func (s *fakeStream) next() (twMsg, bool) {
	s.t.Helper()
	select {
	case m, ok := <-s.in:
		return m, ok
	case <-time.After(patience):
		s.t.Fatal("timed out waiting for a message from the caller")
		return twMsg{}, false
	}
}

// nextNonMedia skips media frames and returns the next other message.
func (s *fakeStream) nextNonMedia() (twMsg, bool) {
	s.t.Helper()
	for {
		m, ok := s.next()
		if !ok || m.Event != "media" {
			return m, ok
		}
	}
}

// drain returns every remaining message once the caller has closed the socket.
func (s *fakeStream) drain() []twMsg {
	s.t.Helper()
	var out []twMsg
	for {
		m, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, m)
	}
}

// tone is d of a 440 Hz sine at amp of full scale, as 8 kHz mu-law.
func tone(d time.Duration, amp float64) []byte {
	out := make([]byte, audioBytes(d))
	for i := range out {
		s := amp * 32767 * math.Sin(2*math.Pi*440*float64(i)/8000)
		out[i] = g711.EncodeMulawSample(int16(s))
	}
	return out
}

func payloadOf(t *testing.T, m twMsg) []byte {
	t.Helper()
	if m.Media == nil {
		t.Fatalf("not a media message: %s", m.raw)
	}
	b, err := base64.StdEncoding.DecodeString(m.Media.Payload)
	if err != nil {
		t.Fatalf("media payload: %v", err)
	}
	return b
}
