package telnyxsim

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"net/url"
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
}

// Call is a call as the fake holds it.
type Call struct {
	CallControlID, CallLegID, CallSessionID string
	Direction                               string // incoming or outgoing
	From, To                                string
	State                                   string // parked, ringing, answered, hangup
	Alive                                   bool
	Answered                                bool
	HangupCause, HangupSource               string
	AMD                                     string // answering_machine_detection asked for
	ClientState                             string // the latest
	WebhookURL                              string // the call's own, if set at dial
	TransferredTo                           string
	Commands                                []string // actions received, in order (repeats by command_id not counted)
	Streams                                 []StreamOrder
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

// Server is the fake. It is an http.Handler; safe for concurrent use.
type Server struct {
	opts Options
	key  ed25519.PrivateKey
}

// New starts a fake.
func New(o Options) *Server { panic("telnyxsim: not built yet") }

// ServeHTTP answers the REST API under /v2.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {}

// APIKey is the key requests must carry.
func (s *Server) APIKey() string { return s.opts.APIKey }

// ConnectionID is the Call Control Application's id.
func (s *Server) ConnectionID() string { return s.opts.ConnectionID }

// PublicKeyBase64 is the webhook signing key as TELNYX_PUBLIC_KEY holds it.
func (s *Server) PublicKeyBase64() string { return "" }

// Ring places an inbound call from `from` to the account's number `to`: call.initiated
// (state parked) goes to the application's webhook URL; the call then waits for a command
// for FirstCommandTimeout.
func (s *Server) Ring(ctx context.Context, from, to string, o RingOptions) (Call, error) {
	return Call{}, nil
}

// Hangup ends call ccid from the caller's side (source "caller") or the callee's
// ("callee"): call.hangup with hangup_cause normal_clearing.
func (s *Server) Hangup(ccid, source string) {}

// Requests are the requests answered so far.
func (s *Server) Requests() []Request { return nil }

// Webhooks are the event deliveries so far.
func (s *Server) Webhooks() []Webhook { return nil }

// Calls are every call, in the order they began.
func (s *Server) Calls() []Call { return nil }

// Call is call ccid.
func (s *Server) Call(ccid string) (Call, bool) { return Call{}, false }

// WaitCall blocks until call ccid satisfies cond, or ctx ends.
func (s *Server) WaitCall(ctx context.Context, ccid string, cond func(Call) bool) (Call, error) {
	return Call{}, nil
}

// TransferredTo is the number call ccid was transferred to; "" if none.
func (s *Server) TransferredTo(ccid string) string { return "" }

// AddFault adds a fault.
func (s *Server) AddFault(f Fault) {}

// Close ends every call and waits for the fake's goroutines.
func (s *Server) Close() {}
