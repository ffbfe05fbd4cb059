package faketwilio

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
)

// The Calls resource (https://www.twilio.com/docs/voice/api/call-resource): creating a
// call answers at once with the queued call, then one goroutine per call plays it out as
// Twilio would (callrun.go) while another delivers its status callbacks in order.

// Defaults of an outbound call's callee and limits.
const (
	// DefaultRing is how long a callee's phone rings before the Answer's outcome, kept
	// short so tests are quick.
	DefaultRing = 50 * time.Millisecond
	// DefaultHold is how long a callee without a Talk func stays on the line once answered.
	DefaultHold = time.Second
	// DefaultTimeLimit is Twilio's default TimeLimit: four hours.
	DefaultTimeLimit = 4 * time.Hour
	// MaxTimeout is the longest ring Twilio allows; larger Timeout values are capped.
	MaxTimeout = 600 * time.Second
)

// Twilio error codes of the Calls resource (https://www.twilio.com/docs/api/errors). The
// 1xxxx and 3xxxx codes are not REST answers but what Twilio's debugger logs for a call; the
// fake records them in Call.Errors.
const (
	CodeInvalidParameter           = 20001 // 400: a parameter value the resource does not take
	CodeNoTo                       = 21201 // 400: To is missing
	CodeInvalidCallURL             = 21205 // 400: Url missing (and no Twiml) or not an absolute http(s) URL
	CodeInvalidTimeout             = 21208 // 400: Timeout or TimeLimit is not a positive whole number
	CodeFromNotVerified            = 21210 // 400: From is not one of the account's numbers
	CodeInvalidTo                  = 21211 // 400: To is not an E.164 number
	CodeInvalidFrom                = 21212 // 400: From is not an E.164 number
	CodeNoFrom                     = 21213 // 400: From is missing
	CodeCallNotInProgress          = 21220 // 400: updating a call that has ended
	CodeInvalidMachineDetection    = 21234 // 400: MachineDetection is not Enable or DetectMessageEnd
	CodeInvalidStatusCallbackEvent = 21626 // 400: a StatusCallbackEvent Twilio does not send

	CodeHTTPRetrieval      = 11200 // the TwiML URL failed or answered non-2xx
	CodeDocumentParse      = 12100 // the TwiML is not a <Response> document
	CodeUnsupportedVerb    = 12200 // a verb the fake does not run (or a <Dial> without a number)
	CodeInvalidContentType = 12300 // the TwiML answer is not XML
	CodeStreamHandshake    = 31920 // the <Stream> WebSocket could not be opened
	CodeStreamClosed       = 31921 // the <Stream> WebSocket ended with an error
	CodeCallee             = 0     // not Twilio's: the Answer is invalid or its Talk func failed
)

// Call statuses (https://www.twilio.com/docs/voice/api/call-resource#call-status-values).
const (
	StatusQueued     = "queued"
	StatusInitiated  = "initiated"
	StatusRinging    = "ringing"
	StatusInProgress = "in-progress"
	StatusCompleted  = "completed"
	StatusBusy       = "busy"
	StatusNoAnswer   = "no-answer"
	StatusFailed     = "failed"
	StatusCanceled   = "canceled"
)

// Ended reports whether a call status is final.
func Ended(status string) bool {
	switch status {
	case StatusCompleted, StatusBusy, StatusNoAnswer, StatusFailed, StatusCanceled:
		return true
	}
	return false
}

// callbackEvents are the StatusCallbackEvent values, in the order they happen.
var callbackEvents = []string{"initiated", "ringing", "answered", "completed"}

// Outcome is what happens when an outbound call rings.
type Outcome string

// Outcomes of Answer; the zero value answers.
const (
	OutcomeAnswer   Outcome = "answer"
	OutcomeBusy     Outcome = "busy"
	OutcomeNoAnswer Outcome = "no-answer"
	OutcomeFailed   Outcome = "failed"
)

// Answer is what the callee of one outbound call does. The zero value is a human who
// answers after DefaultRing and hangs up DefaultHold later.
type Answer struct {
	// Outcome of the ringing (default OutcomeAnswer). A call whose Timeout is shorter than
	// RingFor is not answered: it ends no-answer after Timeout.
	Outcome Outcome
	// RingFor is how long the phone rings before the outcome (default DefaultRing).
	RingFor time.Duration
	// AnsweredBy is the machine-detection verdict (default "human"; also machine_start,
	// machine_end_beep, machine_end_silence, machine_end_other, fax, unknown). It is only
	// reported when the call asked for MachineDetection; Enable reports machine_end_* as
	// machine_start and DetectMessageEnd reports machine_start as machine_end_other, as
	// Twilio's two modes do.
	AnsweredBy string
	// Hold is how long the callee stays on the line once answered, then hangs up. Default
	// DefaultHold without Talk; with Talk, zero means no limit.
	Hold time.Duration
	// Talk, when set, runs once for each media stream the call's TwiML connects, with the
	// live simulated call: it may make the callee speak, press keys and read what Handset
	// played. The callee hangs up when Talk returns; ctx ends when the stream ends for any
	// other reason, and Talk must then return. An error is recorded in Call.Errors.
	Talk func(ctx context.Context, c *twiliocaller.Call) error
}

// StatusCallback is one status callback the fake sent for a call.
type StatusCallback struct {
	Event  string     // initiated, ringing, answered or completed
	Params url.Values // the parameters sent (CallStatus, SequenceNumber, …)
	Status int        // HTTP status of the answer; 0 when none arrived
	Err    string     // why no answer arrived
}

// Webhook is one request the fake made for a call's TwiML.
type Webhook struct {
	URL, Method string
	Params      url.Values
	Status      int    // HTTP status of the answer; 0 when none arrived
	Err         string // why no answer arrived
}

// CallError is one error Twilio's debugger would show for a call.
type CallError struct {
	Code    int // Twilio error code, like 11200; CodeCallee for a Talk error
	Message string
}

// Who ended a call, in Call.HangupBy.
const (
	HangupCallee    = "callee"     // Hold ran out or Talk returned
	HangupAPI       = "api"        // POST Status=completed
	HangupTimeLimit = "time-limit" // TimeLimit ran out
	HangupTwiML     = "twiml"      // <Hangup>, <Dial>, an error, or the document ran out
	HangupClose     = "close"      // Server.Close
)

// Call is a snapshot of one outbound call.
type Call struct {
	SID, To, From        string
	URL, Method, Twiml   string // the document to run: as created, or as last redirected
	StatusCallback       string
	StatusCallbackMethod string
	StatusCallbackEvents []string // as asked; none means only completed
	MachineDetection     string
	Timeout, TimeLimit   time.Duration // as asked; 0 when not given

	Status     string
	AnsweredBy string // machine-detection verdict; "" without MachineDetection
	HangupBy   string // who ended an answered call, or canceled one before the answer (HangupAPI, …)
	Created    time.Time
	Updated    time.Time
	Started    time.Time     // dialled (initiated)
	Answered   time.Time     // zero unless answered
	Ended      time.Time     // zero while live
	Duration   time.Duration // from answer to end, whole seconds

	Callbacks        []StatusCallback // status callbacks sent, in order
	Webhooks         []Webhook        // TwiML requests made, in order
	Verbs            []string         // TwiML verbs run, in order
	Streams          int              // media streams opened
	TransferredTo    string           // the number a <Dial> connected the callee to
	TransferCallerID string           // the <Dial callerId>
	Errors           []CallError
	// Done is set once the call has ended and every status callback has been answered.
	Done bool
}

// CallbackStatuses lists the CallStatus of every status callback sent, in order.
func (c Call) CallbackStatuses() []string {
	out := make([]string, len(c.Callbacks))
	for i, cb := range c.Callbacks {
		out[i] = cb.Params.Get("CallStatus")
	}
	return out
}

// callTable is the Calls resource's state inside Server; the fields after the blank line
// are guarded by Server.mu.
type callTable struct {
	ctx      context.Context // ends every call on Close
	cancel   context.CancelFunc
	wg       sync.WaitGroup // every goroutine of every call
	clk      clock.Clock
	client   *http.Client
	insecure bool
	answer   func(to string) Answer

	byID    map[string]*outCall
	order   []*outCall
	changed chan struct{} // closed and replaced whenever a call changes
	closed  bool
}

// outCall is one outbound call. The fields before the blank line never change after
// create; the others are guarded by Server.mu.
type outCall struct {
	sid, to, from        string
	statusCallback       string
	statusCallbackMethod string
	events               []string
	md                   string
	timeout, timeLimit   time.Duration
	created              time.Time
	wake                 chan struct{} // size 1: one pending wake-up tells the runner to look at ctl

	doc             source // what runs when answered; redirects before that replace it
	status          string
	answeredBy      string
	hangupBy        string
	updated         time.Time
	started         time.Time
	answered, ended time.Time
	duration        time.Duration
	callbacks       []StatusCallback
	webhooks        []Webhook
	verbs           []string
	streams         int
	stream          *twiliocaller.Call // the live media stream, if any
	transferTo      string
	callerID        string
	errs            []CallError
	ctl             *control // a REST update waiting for the runner
	done            bool
}

// source is where a TwiML document comes from: a URL fetched with method, or inline.
type source struct{ url, method, twiml string }

// control is a REST update of a live call for its runner: a hangup or a redirect.
type control struct {
	hangup  bool
	doc     source
	applied chan struct{} // closed once the runner has acted on it, or the call ended
}

func (s *Server) initCalls(o Options) {
	t := &s.calls
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.clk, t.client, t.insecure, t.answer = o.Clock, o.HTTPClient, o.InsecureStreamURL, o.Answer
	if t.clk == nil {
		t.clk = clock.Real{}
	}
	if t.client == nil {
		t.client = http.DefaultClient
	}
	t.byID = map[string]*outCall{}
	t.changed = make(chan struct{})
	s.mux.HandleFunc(APIVersion+"/Accounts/{account}/Calls.json", s.callList)
	s.mux.HandleFunc(APIVersion+"/Accounts/{account}/Calls/{call}", s.callInstance)
}

// Close hangs up every outbound call still going (streams drop without a stop, as when
// Twilio's side fails) and waits for all their goroutines. Calls created afterwards are
// refused with 503. Calling it again does nothing.
func (s *Server) Close() {
	s.mu.Lock()
	s.calls.closed = true
	s.mu.Unlock()
	s.calls.cancel()
	s.calls.wg.Wait()
}

// Calls returns a snapshot of every outbound call, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls.order))
	for i, c := range s.calls.order {
		out[i] = c.snapshotLocked()
	}
	return out
}

// Call returns a snapshot of the outbound call sid.
func (s *Server) Call(sid string) (Call, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.calls.byID[sid]
	if !ok {
		return Call{}, false
	}
	return c.snapshotLocked(), true
}

// Stream is the live media stream of call sid, or nil when none is open.
func (s *Server) Stream(sid string) *twiliocaller.Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.calls.byID[sid]; ok {
		return c.stream
	}
	return nil
}

// WaitCall blocks until cond holds for call sid and returns the snapshot it held for. It
// fails when the call is unknown, when it is Done with cond still false, or with ctx.
func (s *Server) WaitCall(ctx context.Context, sid string, cond func(Call) bool) (Call, error) {
	for {
		s.mu.Lock()
		c, ok := s.calls.byID[sid]
		var snap Call
		if ok {
			snap = c.snapshotLocked()
		}
		changed := s.calls.changed
		s.mu.Unlock()
		switch {
		case !ok:
			return Call{}, fmt.Errorf("faketwilio: no call %s", sid)
		case cond(snap):
			return snap, nil
		case snap.Done:
			return snap, fmt.Errorf("faketwilio: call %s is over (%s) with the condition unmet", sid, snap.Status)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return snap, fmt.Errorf("faketwilio: wait for call %s (%s): %w", sid, snap.Status, context.Cause(ctx))
		}
	}
}

// WaitDone waits until call sid is Done: ended with every status callback answered.
func (s *Server) WaitDone(ctx context.Context, sid string) (Call, error) {
	return s.WaitCall(ctx, sid, func(c Call) bool { return c.Done })
}

// WaitCalls waits until at least n calls have been created and every one is Done, and
// returns them oldest first.
func (s *Server) WaitCalls(ctx context.Context, n int) ([]Call, error) {
	for {
		s.mu.Lock()
		all := len(s.calls.order) >= n
		for _, c := range s.calls.order {
			all = all && c.done
		}
		changed := s.calls.changed
		s.mu.Unlock()
		if all {
			return s.Calls(), nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return s.Calls(), fmt.Errorf("faketwilio: wait for %d calls: %w", n, context.Cause(ctx))
		}
	}
}

func (s *Server) callsChangedLocked() {
	close(s.calls.changed)
	s.calls.changed = make(chan struct{})
}

func (c *outCall) snapshotLocked() Call {
	out := Call{
		SID: c.sid, To: c.to, From: c.from, URL: c.doc.url, Method: c.doc.method, Twiml: c.doc.twiml,
		StatusCallback: c.statusCallback, StatusCallbackMethod: c.statusCallbackMethod,
		StatusCallbackEvents: slices.Clone(c.events), MachineDetection: c.md,
		Timeout: c.timeout, TimeLimit: c.timeLimit,
		Status: c.status, AnsweredBy: c.answeredBy, HangupBy: c.hangupBy,
		Created: c.created, Updated: c.updated, Started: c.started, Answered: c.answered, Ended: c.ended,
		Duration: c.duration, Callbacks: slices.Clone(c.callbacks), Webhooks: slices.Clone(c.webhooks),
		Verbs: slices.Clone(c.verbs), Streams: c.streams, TransferredTo: c.transferTo,
		TransferCallerID: c.callerID, Errors: slices.Clone(c.errs), Done: c.done,
	}
	for i := range out.Callbacks {
		out.Callbacks[i].Params = cloneValues(out.Callbacks[i].Params)
	}
	for i := range out.Webhooks {
		out.Webhooks[i].Params = cloneValues(out.Webhooks[i].Params)
	}
	return out
}

// callList answers POST …/Calls.json: it checks the request as Twilio does, answers 201 with
// the queued call and starts playing it out.
func (s *Server) callList(w http.ResponseWriter, r *http.Request) {
	if !s.ownAccount(w, r.PathValue("account")) {
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, http.MethodPost)
		return
	}
	c, status, code, msg := s.newCall(r.PostForm)
	if code != 0 {
		writeError(w, status, code, msg)
		return
	}
	s.mu.Lock()
	if s.calls.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, CodeInternalError, "Service Unavailable: the fake is closed")
		return
	}
	s.calls.byID[c.sid] = c
	s.calls.order = append(s.calls.order, c)
	s.calls.wg.Add(2) // the runner and its callback sender
	snap := c.snapshotLocked()
	s.callsChangedLocked()
	s.mu.Unlock()
	go s.runCall(c)
	writeJSON(w, http.StatusCreated, s.callJSON(snap))
}

// newCall validates a create form; a non-zero code is the error to answer.
func (s *Server) newCall(form url.Values) (c *outCall, status, code int, msg string) {
	bad := func(code int, format string, args ...any) (*outCall, int, int, string) {
		return nil, http.StatusBadRequest, code, fmt.Sprintf(format, args...)
	}
	get := func(k string) string { return strings.TrimSpace(form.Get(k)) }
	to, from := get("To"), get("From")
	switch {
	case to == "":
		return bad(CodeNoTo, "A 'To' phone number is required.")
	case !validE164(to):
		return bad(CodeInvalidTo, "The 'To' number %s is not a valid phone number.", to)
	case from == "":
		return bad(CodeNoFrom, "A 'From' phone number is required.")
	case !validE164(from):
		return bad(CodeInvalidFrom, "The 'From' number %s is not a valid phone number.", from)
	}
	_, owned := s.Number(from)
	if !owned {
		return bad(CodeFromNotVerified, "The source phone number provided, %s, is not yet verified for your account. You may only make calls from phone numbers that you've verified or purchased from Twilio.", from)
	}
	doc := source{url: get("Url"), method: strings.ToUpper(get("Method")), twiml: form.Get("Twiml")}
	switch {
	case doc.url == "" && strings.TrimSpace(doc.twiml) == "":
		return bad(CodeInvalidCallURL, "Url parameter is required: give Url or Twiml (the fake runs no ApplicationSid).")
	case doc.url != "" && !callbackURL(doc.url):
		return bad(CodeInvalidCallURL, "Url is not a valid URL: %s", doc.url)
	case doc.url != "":
		doc.twiml = "" // Twilio ignores Twiml when Url is given
	}
	cb, cbMethod := get("StatusCallback"), strings.ToUpper(get("StatusCallbackMethod"))
	if cb != "" && !callbackURL(cb) {
		return bad(CodeInvalidURL, "StatusCallback is not a valid URL: %s", cb)
	}
	for k, v := range map[string]string{"Method": doc.method, "StatusCallbackMethod": cbMethod} {
		if v != "" && v != http.MethodGet && v != http.MethodPost {
			return bad(CodeInvalidMethod, "%s is not valid: %q is not GET or POST", k, v)
		}
	}
	var events []string
	for _, v := range form["StatusCallbackEvent"] {
		for _, e := range strings.Fields(v) { // libraries send repeats; some send one spaced value
			if !slices.Contains(callbackEvents, e) {
				return bad(CodeInvalidStatusCallbackEvent, "StatusCallbackEvent %q is not one of initiated, ringing, answered, completed", e)
			}
			events = append(events, e)
		}
	}
	md := get("MachineDetection")
	if md != "" && md != "Enable" && md != "DetectMessageEnd" {
		return bad(CodeInvalidMachineDetection, "MachineDetection %q is not valid: use Enable or DetectMessageEnd", md)
	}
	var secs [2]time.Duration
	for i, k := range []string{"Timeout", "TimeLimit"} {
		v := get(k)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return bad(CodeInvalidTimeout, "%s %q is not a positive whole number of seconds", k, v)
		}
		secs[i] = time.Duration(n) * time.Second
	}
	now := s.now().UTC().Truncate(time.Second)
	return &outCall{
		sid: twiliocaller.NewSid("CA"), to: to, from: from,
		statusCallback: cb, statusCallbackMethod: cmpOr(cbMethod, http.MethodPost), events: events,
		md: md, timeout: min(secs[0], MaxTimeout), timeLimit: secs[1], created: now,
		wake: make(chan struct{}, 1), doc: doc, status: StatusQueued, updated: now,
	}, 0, 0, ""
}

// callInstance answers GET and POST …/Calls/{CA}.json.
func (s *Server) callInstance(w http.ResponseWriter, r *http.Request) {
	if !s.ownAccount(w, r.PathValue("account")) {
		return
	}
	sid, ok := jsonName(r.PathValue("call"))
	if !ok {
		s.notFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodGet:
		snap, found := s.Call(sid)
		if !found {
			s.notFound(w, r)
			return
		}
		writeJSON(w, http.StatusOK, s.callJSON(snap))
	case http.MethodPost:
		s.updateCall(w, r, sid)
	default:
		methodNotAllowed(w, http.MethodGet, http.MethodPost, http.MethodDelete)
	}
}

// updateCall applies Status (completed or canceled) or a redirect (Url or Twiml) as Twilio
// does, and answers once the call's runner has acted on it, so a client that hangs up or
// redirects sees the stream already stopped.
func (s *Server) updateCall(w http.ResponseWriter, r *http.Request, sid string) {
	get := func(k string) string { return strings.TrimSpace(r.PostForm.Get(k)) }
	status := get("Status")
	doc := source{url: get("Url"), method: strings.ToUpper(get("Method")), twiml: r.PostForm.Get("Twiml")}
	switch {
	case status != "" && status != StatusCompleted && status != StatusCanceled:
		writeError(w, http.StatusBadRequest, CodeInvalidParameter,
			fmt.Sprintf("Status %q is not valid: use completed or canceled", status))
		return
	case doc.url != "" && !callbackURL(doc.url):
		writeError(w, http.StatusBadRequest, CodeInvalidCallURL, "Url is not a valid URL: "+doc.url)
		return
	case doc.method != "" && doc.method != http.MethodGet && doc.method != http.MethodPost:
		writeError(w, http.StatusBadRequest, CodeInvalidMethod, fmt.Sprintf("Method is not valid: %q is not GET or POST", doc.method))
		return
	case doc.url != "":
		doc.twiml = ""
	}
	redirect := doc.url != "" || strings.TrimSpace(doc.twiml) != ""

	s.mu.Lock()
	c, ok := s.calls.byID[sid]
	if !ok {
		s.mu.Unlock()
		s.notFound(w, r)
		return
	}
	if Ended(c.status) {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, CodeCallNotInProgress, "Call is not in-progress. Cannot redirect.")
		return
	}
	var ctl *control
	switch {
	case status == StatusCanceled && c.status == StatusInProgress:
		// Twilio ignores canceling a call that is already answered.
	case status != "":
		ctl = &control{hangup: true}
	case redirect && c.status == StatusInProgress:
		ctl = &control{doc: doc}
	case redirect: // not answered yet: the new document runs when it is
		c.doc = doc
		c.updated = s.now().UTC().Truncate(time.Second)
		s.callsChangedLocked()
	}
	if ctl != nil {
		ctl.applied = make(chan struct{})
		if c.ctl != nil && c.ctl.hangup {
			ctl = c.ctl // a pending hangup wins over anything after it
		} else {
			if c.ctl != nil {
				close(c.ctl.applied) // superseded
			}
			c.ctl = ctl
			if redirect {
				c.doc = doc
			}
		}
		select {
		case c.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	s.mu.Unlock()
	if ctl != nil {
		select {
		case <-ctl.applied:
		case <-r.Context().Done():
		}
	}
	snap, _ := s.Call(sid)
	writeJSON(w, http.StatusOK, s.callJSON(snap))
}

// callJSON is the Call resource in Twilio's JSON form.
func (s *Server) callJSON(c Call) map[string]any {
	base := APIVersion + "/Accounts/" + s.sid + "/Calls/" + c.SID
	stamp := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return twilioTime(t)
	}
	var duration any
	if Ended(c.Status) {
		duration = strconv.Itoa(int(c.Duration / time.Second))
	}
	phoneSID := ""
	if n, ok := s.Number(c.From); ok {
		phoneSID = n.SID
	}
	return map[string]any{
		"account_sid":      s.sid,
		"annotation":       nil,
		"answered_by":      nullable(c.AnsweredBy),
		"api_version":      "2010-04-01",
		"caller_name":      nil,
		"date_created":     twilioTime(c.Created),
		"date_updated":     twilioTime(c.Updated),
		"direction":        "outbound-api",
		"duration":         duration,
		"end_time":         stamp(c.Ended),
		"forwarded_from":   nil,
		"from":             c.From,
		"from_formatted":   FriendlyName(c.From),
		"group_sid":        nil,
		"parent_call_sid":  nil,
		"phone_number_sid": phoneSID,
		"price":            nil,
		"price_unit":       "USD",
		"queue_time":       "0",
		"sid":              c.SID,
		"start_time":       stamp(c.Started),
		"status":           c.Status,
		"subresource_uris": map[string]string{
			"events":        base + "/Events.json",
			"notifications": base + "/Notifications.json",
			"recordings":    base + "/Recordings.json",
			"streams":       base + "/Streams.json",
		},
		"to":           c.To,
		"to_formatted": FriendlyName(c.To),
		"trunk_sid":    nil,
		"uri":          base + ".json",
	}
}
