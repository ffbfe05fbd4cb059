package telnyxsim

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Defaults.
const (
	// DefaultFirstCommandTimeout is how long a parked inbound call waits for a command.
	DefaultFirstCommandTimeout = 10 * time.Second
	// DefaultRing is how long a callee rings before its outcome.
	DefaultRing = 50 * time.Millisecond
	// DefaultWebhookRetries is how many times an event is sent again after a non-2xx answer.
	DefaultWebhookRetries = 2
)

// Options configure a fake.
type Options struct {
	// APIKey is the key every request must carry as a Bearer token (default generated).
	APIKey string
	// ConnectionID is the Call Control Application's id (default generated).
	ConnectionID string
	// ApplicationName is the application's name (default "handset").
	ApplicationName string
	// WebhookURL is the application's webhook_event_url to begin with; FailoverURL its
	// webhook_event_failover_url.
	WebhookURL, FailoverURL string
	// WebhookAPIVersion is the application's webhook_api_version (default "2").
	WebhookAPIVersion string
	// Numbers are the account's phone numbers.
	Numbers []Number
	// Callee says what the callee of an outbound call to `to` does (nil: a person who
	// answers after DefaultRing and stays).
	Callee func(to string) Callee
	// OpenStream opens a call's media stream when a command asks for one (answer or
	// streaming_start with stream_url). Nil: the order is only recorded (Streams).
	OpenStream func(ctx context.Context, s StreamOrder) error
	// FirstCommandTimeout is how long a parked inbound call waits for a command before
	// Telnyx drops it (default DefaultFirstCommandTimeout; UNCONFIRMED semantics).
	FirstCommandTimeout time.Duration
	// WebhookRetries is how many times an event answered with a non-2xx status is sent
	// again, with the same data.id and meta.attempt+1 (0: DefaultWebhookRetries; negative:
	// none). After them it goes to the failover URL, if any.
	WebhookRetries int
	// HTTP sends the webhooks (default a client of its own).
	HTTP *http.Client
	// RetryDelay is the pause before an event is sent again (default 20 ms).
	RetryDelay time.Duration
	// DetectionTime is how long answering-machine detection takes after the answer
	// (default 20 ms).
	DetectionTime time.Duration
	// HangupRace makes every hangup command lose a race with the other side: the fake
	// ends the call from the far end first and answers 422 with code 90018, as Telnyx does
	// when the caller hung up while the command was in flight.
	HangupRace bool
	// NoStreamFailed sends no streaming.failed when a stream fails or is dropped: the call
	// just lives on without media (whether Telnyx reports a stream the server dropped is
	// UNCONFIRMED).
	NoStreamFailed bool
	// EndedCallsNotFound makes GET /calls/{id} answer 404 for a call that has ended,
	// instead of is_alive false (which of the two Telnyx does is UNCONFIRMED).
	EndedCallsNotFound bool
	// Now is the clock webhook timestamps are signed with (default time.Now).
	Now func() time.Time
}

// Number is one of the account's phone numbers.
type Number struct {
	ID             string // default generated
	PhoneNumber    string // E.164
	ConnectionID   string // the application it is on; "" for none
	ConnectionName string
	Status         string // default "active"
}

// Outcome is how an outbound call's ringing ends.
type Outcome string

// Outcomes; the zero value answers.
const (
	OutcomeAnswer   Outcome = "answer"
	OutcomeBusy     Outcome = "busy"      // call.hangup user_busy
	OutcomeNoAnswer Outcome = "no-answer" // rings until timeout_secs: call.hangup timeout
	OutcomeFailed   Outcome = "failed"    // call.hangup call_rejected
)

// Callee is what the callee of one outbound call does.
type Callee struct {
	Outcome Outcome
	// RingFor is how long it rings first (default DefaultRing).
	RingFor time.Duration
	// Machine: an answering machine picks up; its greeting lasts Greeting and ends with a
	// beep (call.machine.greeting.ended beep_detected) when detection asked for it.
	Machine  bool
	Greeting time.Duration
	// Hold is how long the callee stays once answered, then hangs up; 0 stays until
	// hung up.
	Hold time.Duration
}

// StreamOrder is a command's request for a media stream: what Telnyx would dial the
// stream_url with.
type StreamOrder struct {
	CallControlID, CallLegID, CallSessionID string
	From, To                                string
	Direction                               string // incoming or outgoing
	StreamURL                               string
	Track                                   string // stream_track
	Codec                                   string // stream_codec
	BidirectionalMode                       string
	BidirectionalCodec                      string
	SampleRate                              int // stream_bidirectional_sampling_rate
	TargetLegs                              string
	AuthToken                               string
	ClientState                             string
}

// RingOptions are an inbound call's details.
type RingOptions struct {
	// Attestation is the STIR/SHAKEN level (A, B, C; "" none).
	Attestation string
	// CallControlID is the call's id (default generated); one in use is refused.
	CallControlID string
}

// Withheld is the from of a caller who withheld their number (UNCONFIRMED how Telnyx
// shows one); Ring takes it as well as E.164 numbers.
const Withheld = "anonymous"

// Call is a call as the fake holds it.
type Call struct {
	CallControlID, CallLegID, CallSessionID string
	Direction                               string // incoming or outgoing
	From, To                                string
	State                                   string // parked, bridging, answered, hangup
	Alive                                   bool
	Answered                                bool
	HangupCause, HangupSource               string
	AMD                                     string // answering_machine_detection asked for
	Verdict                                 string // the latest machine detection result sent
	ClientState                             string // the latest
	WebhookURL                              string // the call's own, if set at dial
	TransferredTo                           string
	Commands                                []string // actions that took effect, in order (a repeated command_id does not)
	Streams                                 []StreamOrder
	Events                                  []string // event types delivered (or given up on), in order
	Pending                                 int      // events not delivered yet
	Started, AnsweredAt, Ended              time.Time
}

// Request is one request the fake answered.
type Request struct {
	Method        string
	Path          string
	Query         url.Values
	Body          []byte
	Authenticated bool
	Status        int
	Code          string // the Telnyx error code answered; "" for a success
}

// Webhook is one delivery of an event.
type Webhook struct {
	EventType string
	ID        string // data.id, the same on every attempt
	Attempt   int
	URL       string
	Body      []byte
	Status    int // the answer's status; 0 for a transport failure
}

// Fault makes matching requests stall or fail.
type Fault struct {
	// Method and Path select the requests: empty Method matches any; Path matches when
	// it occurs anywhere in the URL path.
	Method, Path string
	// Delay holds the answer back; the request's cancellation cuts it short.
	Delay time.Duration
	// Status, when non-zero, is the answer's status with a Telnyx error body.
	Status int
	// After lets this many matching requests through first.
	After int
	// Times is how many requests the fault applies to; 0 means every one.
	Times int
}

// Error codes the fake answers with. Only CodeCallEnded is confirmed from a real answer;
// the others are the fake's own and only their HTTP status matters to a client.
const (
	CodeCallEnded       = "90018" // "Call has already ended"
	CodeUnauthorized    = "10009" // UNCONFIRMED
	CodeNotFound        = "10005" // UNCONFIRMED
	CodeInvalidBody     = "10015" // UNCONFIRMED
	CodeInvalidCommand  = "90015" // UNCONFIRMED: a command the call's state does not allow
	CodeServerError     = "10007" // UNCONFIRMED
	CodeTooManyRequests = "10011" // UNCONFIRMED
)

// maxBody bounds a request body the fake reads.
const maxBody = 1 << 20

// Server is the fake. It is an http.Handler; safe for concurrent use.
type Server struct {
	opts   Options
	priv   ed25519.PrivateKey
	pub    ed25519.PublicKey
	client *http.Client
	mux    *http.ServeMux
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	app      application
	numbers  []*Number
	calls    map[string]*call
	order    []string          // call control ids in the order the calls began
	dials    map[string]string // command_id of a dial -> its call control id
	requests []Request
	webhooks []Webhook
	faults   []*Fault
	changed  chan struct{} // closed and replaced on every change
}

// application is the Call Control Application's state.
type application struct {
	name, webhookURL, failoverURL, apiVersion string
}

// New returns a fake holding o's account. It panics on Options no test means: a number
// that is not E.164 or is given twice.
func New(o Options) *Server {
	if o.APIKey == "" {
		o.APIKey = "KEY" + randomHex(16)
	}
	if o.ConnectionID == "" {
		o.ConnectionID = randomDigits(19)
	}
	if o.FirstCommandTimeout <= 0 {
		o.FirstCommandTimeout = DefaultFirstCommandTimeout
	}
	if o.WebhookRetries == 0 {
		o.WebhookRetries = DefaultWebhookRetries
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 20 * time.Millisecond
	}
	if o.DetectionTime <= 0 {
		o.DetectionTime = 20 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic("telnyxsim: " + err.Error())
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{opts: o, priv: priv, pub: pub, client: o.HTTP, mux: http.NewServeMux(), ctx: ctx, stop: stop,
		app: application{name: cmpOr(o.ApplicationName, "handset"), webhookURL: o.WebhookURL, failoverURL: o.FailoverURL,
			apiVersion: cmpOr(o.WebhookAPIVersion, "2")},
		calls: map[string]*call{}, dials: map[string]string{}, changed: make(chan struct{})}
	if s.client == nil {
		s.client = &http.Client{Timeout: 10 * time.Second}
	}
	seen := map[string]bool{}
	for _, n := range o.Numbers {
		if !validE164(n.PhoneNumber) || seen[n.PhoneNumber] {
			panic("telnyxsim: phone number " + n.PhoneNumber + " is not E.164 or is given twice")
		}
		seen[n.PhoneNumber] = true
		n.ID = cmpOr(n.ID, randomDigits(19))
		n.Status = cmpOr(n.Status, "active")
		s.numbers = append(s.numbers, &n)
	}
	s.mux.HandleFunc("POST /v2/calls", s.dial)
	s.mux.HandleFunc("GET /v2/calls/{id}", s.fetchCall)
	s.mux.HandleFunc("POST /v2/calls/{id}/actions/{action}", s.command)
	s.mux.HandleFunc("GET /v2/phone_numbers", s.listNumbers)
	s.mux.HandleFunc("PATCH /v2/phone_numbers/{id}", s.updateNumber)
	s.mux.HandleFunc("GET /v2/call_control_applications/{id}", s.getApplication)
	s.mux.HandleFunc("PATCH /v2/call_control_applications/{id}", s.updateApplication)
	s.mux.HandleFunc("GET /v2/balance", s.balance)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "Resource not found", "No route for "+r.Method+" "+r.URL.Path+".")
	})
	return s
}

// ServeHTTP answers the REST API under /v2: the key first, then faults, then the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, CodeInvalidBody, "Request too large", "The body is unreadable or larger than 1 MB.")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &recorder{ResponseWriter: w}
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body, Authenticated: s.authorized(r)}
	defer func() {
		req.Status, req.Code = rec.status, rec.code
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.changedLocked()
		s.mu.Unlock()
	}()
	if !req.Authenticated {
		writeError(rec, http.StatusUnauthorized, CodeUnauthorized, "Authentication failed", "The API key is missing or wrong.")
		return
	}
	if f, ok := s.fault(r); ok {
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if f.Status != 0 {
			code := CodeServerError
			if f.Status == http.StatusTooManyRequests {
				code = CodeTooManyRequests
			}
			writeError(rec, f.Status, code, http.StatusText(f.Status), "A fault of the fake.")
			return
		}
	}
	s.mux.ServeHTTP(rec, r)
}

// authorized checks the Bearer key in constant time.
func (s *Server) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.APIKey)) == 1
}

// fault returns the first fault matching r and uses one of its Times.
func (s *Server) fault(r *http.Request) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if (f.Method != "" && !strings.EqualFold(f.Method, r.Method)) || !strings.Contains(r.URL.Path, f.Path) {
			continue
		}
		if f.After > 0 {
			f.After--
			continue
		}
		out := *f
		if f.Times > 0 {
			if f.Times--; f.Times == 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
		}
		return out, true
	}
	return Fault{}, false
}

// AddFault adds a fault.
func (s *Server) AddFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// SetHangupRace turns Options.HangupRace on or off for the commands from now on.
func (s *Server) SetHangupRace(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.HangupRace = on
}

// APIKey is the key requests must carry.
func (s *Server) APIKey() string { return s.opts.APIKey }

// ConnectionID is the Call Control Application's id.
func (s *Server) ConnectionID() string { return s.opts.ConnectionID }

// Requests are the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Webhooks are the event deliveries so far, oldest first.
func (s *Server) Webhooks() []Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Webhook(nil), s.webhooks...)
}

// Close ends every call without further events and waits for the fake's goroutines.
func (s *Server) Close() {
	s.stop()
	s.mu.Lock()
	for _, c := range s.calls {
		c.finishLocked(s.opts.Now())
	}
	s.changedLocked()
	s.mu.Unlock()
	s.wg.Wait()
}

// changedLocked wakes every waiter.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// recorder keeps the status and Telnyx error code of an answer.
type recorder struct {
	http.ResponseWriter
	status int
	code   string
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// writeError answers Telnyx's error body.
func writeError(w http.ResponseWriter, status int, code, title, detail string) {
	if rec, ok := w.(*recorder); ok {
		rec.code = code
	}
	writeJSON(w, status, map[string]any{"errors": []map[string]string{{"code": code, "title": title, "detail": detail}}})
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// readJSON decodes the request's body into v, refusing what is not one JSON object.
func readJSON(r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	return dec.Decode(v) == nil && !dec.More()
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomDigits(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = '0' + b[i]%10
	}
	if b[0] == '0' {
		b[0] = '1'
	}
	return string(b)
}

// randomUUID is a version 4 UUID.
func randomUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// validE164 reports whether n is + and 8 to 15 digits, the first not 0.
func validE164(n string) bool {
	d, ok := strings.CutPrefix(n, "+")
	if !ok || len(d) < 8 || len(d) > 15 || d[0] == '0' {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}
