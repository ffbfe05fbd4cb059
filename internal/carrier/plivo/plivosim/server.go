package plivosim

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultAuthID    = "MAZDQ1ZJIYMDZKMTAYNM"
	DefaultAuthToken = "ZmQ0YzE0ZjE5ZDNmMjdiNTM2MjM2NGMzNGRiNDIy"
	DefaultAppID     = "20372631212782780"
	DefaultName      = "Handset test account"
)

// Options configure the fake.
type Options struct {
	// AuthID and AuthToken are the account's credentials (default DefaultAuthID and
	// DefaultAuthToken).
	AuthID, AuthToken string
	// Numbers are the account's phone numbers.
	Numbers []Number
	// Applications are the account's applications; none given: one, DefaultAppID, with
	// no URLs.
	Applications []Application
	// Callee says how each called number (E.164 with "+") behaves; nil: everyone is a
	// person who answers at once and stays an hour.
	Callee func(to string) Callee
	// HTTPClient makes the fake's requests to Handset (default a new client).
	HTTPClient *http.Client
	// OpenStream is called, on its own goroutine, when an answer document opens a
	// <Stream>: the simulated caller's media side. ctx ends when the call does. nil: the
	// order is only recorded (Call.Streams) and the stream counts as open until the call
	// ends.
	OpenStream func(ctx context.Context, o StreamOrder) error
	// DialURL, when set, maps the URL of a request to Handset (what V3 signs) to the
	// address it is sent to: a Handset reached directly while its public URL names
	// another host.
	DialURL func(rawURL string) string
	// QueuedFor is how long a placed call stays a queued request before it is dialled and
	// gets its CallUUID (default none).
	QueuedFor time.Duration
	// MachineDelay is how long after the answer document was fetched the
	// machine-detection verdict is POSTed (default none; it always comes after).
	MachineDelay time.Duration
	// MachineDetectionValues are the machine_detection values the fake accepts (default
	// "true" and "hangup", which is unconfirmed).
	MachineDetectionValues []string
	// AccountType is the account's account_type (default "standard").
	AccountType string
	Logger      *slog.Logger
}

// Number is one of the account's phone numbers.
type Number struct {
	Number string // E.164 with "+"; Plivo writes it without
	Alias  string
	AppID  string // the application it is linked to; "" none
}

// Application is one of the account's applications.
type Application struct {
	AppID, Name             string
	AnswerURL, AnswerMethod string
	HangupURL, HangupMethod string
}

// Request is what the fake recorded about one request it answered; the basic auth's
// password is never recorded.
type Request struct {
	Method, Path  string
	Query, Form   url.Values
	Authenticated bool
	Status        int
}

// Fault makes matching requests stall or fail.
type Fault struct {
	// Method and Path select requests: empty Method matches any; Path matches when it
	// occurs anywhere in the URL path.
	Method, Path string
	// Delay holds the answer back; the request's own cancellation cuts it short.
	Delay time.Duration
	// Status, when set, is the answer's status, with Plivo's error body.
	Status int
	// After lets this many matching requests through first; Times is how many it applies
	// to (0: all).
	After, Times int
}

// Server is the fake Plivo. It is an http.Handler. Safe for concurrent use.
type Server struct {
	id, token string
	accType   string
	detect    []string
	o         Options
	client    *http.Client
	log       *slog.Logger
	mux       *http.ServeMux

	ctx    context.Context // ends every call on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	requests []Request
	faults   []*Fault
	numbers  []*Number
	apps     map[string]*Application
	calls    []*call
	changed  chan struct{} // closed and replaced on every change of a call
}

// New returns a fake Plivo holding o's account. It panics on options no test means.
func New(o Options) *Server {
	s := &Server{id: or(o.AuthID, DefaultAuthID), token: or(o.AuthToken, DefaultAuthToken),
		accType: or(o.AccountType, "standard"), detect: o.MachineDetectionValues, o: o,
		client: o.HTTPClient, log: o.Logger, mux: http.NewServeMux(),
		apps: map[string]*Application{}, changed: make(chan struct{})}
	if s.client == nil {
		s.client = &http.Client{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if len(s.detect) == 0 {
		s.detect = []string{"true", "hangup"}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	apps := o.Applications
	if len(apps) == 0 {
		apps = []Application{{AppID: DefaultAppID, Name: "handset"}}
	}
	for _, a := range apps {
		a.AnswerMethod, a.HangupMethod = or(a.AnswerMethod, http.MethodPost), or(a.HangupMethod, http.MethodPost)
		s.apps[a.AppID] = &a
	}
	for _, n := range o.Numbers {
		if !strings.HasPrefix(n.Number, "+") || !digits(n.Number[1:]) {
			panic(fmt.Sprintf("plivosim: number %q is not E.164", n.Number))
		}
		if n.AppID != "" && s.apps[n.AppID] == nil {
			panic(fmt.Sprintf("plivosim: number %s is linked to unknown application %s", n.Number, n.AppID))
		}
		s.numbers = append(s.numbers, &n)
	}
	root := "/v1/Account/{auth_id}/"
	s.mux.HandleFunc("GET "+root+"{$}", s.account)
	s.mux.HandleFunc("POST "+root+"Call/{$}", s.makeCall)
	s.mux.HandleFunc("GET "+root+"Call/{id}/{$}", s.getCall)
	s.mux.HandleFunc("POST "+root+"Call/{id}/{$}", s.transfer)
	s.mux.HandleFunc("DELETE "+root+"Call/{id}/{$}", s.hangupCall)
	s.mux.HandleFunc("POST "+root+"Call/{id}/Stream/{$}", s.startStream)
	s.mux.HandleFunc("DELETE "+root+"Request/{id}/{$}", s.cancelRequest)
	s.mux.HandleFunc("GET "+root+"Number/{$}", s.numberList)
	s.mux.HandleFunc("GET "+root+"Number/{number}/{$}", s.numberGet)
	s.mux.HandleFunc("POST "+root+"Number/{number}/{$}", s.numberLink)
	s.mux.HandleFunc("GET "+root+"Application/{app}/{$}", s.appGet)
	s.mux.HandleFunc("POST "+root+"Application/{app}/{$}", s.appUpdate)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "resource not found")
	})
	return s
}

// AuthID is the account's Auth ID.
func (s *Server) AuthID() string { return s.id }

// AuthToken is the token the fake accepts and signs with.
func (s *Server) AuthToken() string { return s.token }

// Close ends every call still going and waits for their goroutines.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// Requests is a snapshot of the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// AddFault arranges a failure for matching requests.
func (s *Server) AddFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// maxBody bounds the request bodies the fake reads.
const maxBody = 1 << 20

// ServeHTTP answers one REST request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query()}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(rec, r.Body, maxBody)
		if err := r.ParseForm(); err == nil {
			req.Form = r.PostForm
		}
	}
	user, pass, ok := r.BasicAuth()
	req.Authenticated = ok && user == s.id && subtle.ConstantTimeCompare([]byte(pass), []byte(s.token)) == 1
	defer func() {
		req.Status = rec.status
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
	}()
	if f, ok := s.fault(r); ok {
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				rec.status = 0
				return
			}
		}
		if f.Status != 0 {
			writeError(rec, f.Status, http.StatusText(f.Status))
			return
		}
	}
	if !req.Authenticated || !strings.HasPrefix(r.URL.Path, "/v1/Account/"+s.id+"/") {
		rec.Header().Set("WWW-Authenticate", `Basic realm="Plivo API"`)
		writeError(rec, http.StatusUnauthorized, "Authentication credentials invalid")
		return
	}
	s.mux.ServeHTTP(rec, r)
}

func (s *Server) fault(r *http.Request) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if (f.Method != "" && f.Method != r.Method) || !strings.Contains(r.URL.Path, f.Path) {
			continue
		}
		if f.After > 0 {
			f.After--
			continue
		}
		out := *f
		if f.Times > 0 {
			if f.Times--; f.Times == 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
		}
		return out, true
	}
	return Fault{}, false
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// writeError answers Plivo's error body.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"api_id": newUUID(), "error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plain is an E.164 number as Plivo writes it, without "+".
func plain(n string) string { return strings.TrimPrefix(n, "+") }
