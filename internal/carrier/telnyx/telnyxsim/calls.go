package telnyxsim

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// Call defaults of Telnyx (UNCONFIRMED values; only their existence matters to tests).
const (
	defaultRingTimeout = 30 * time.Second
	defaultTimeLimit   = 4 * time.Hour
	defaultGreeting    = 100 * time.Millisecond
)

// Answering-machine detection modes a dial may ask for.
var amdModes = []string{"disabled", "detect", "detect_beep", "detect_words", "greeting_end", "premium"}

// Stream codecs and bidirectional rates a stream order may ask for.
var (
	streamCodecs = []string{"PCMU", "PCMA", "G722", "OPUS", "AMR-WB", "L16"}
	streamRates  = []int{0, 8000, 16000, 24000}
)

// call is one call's state; guarded by Server.mu.
type call struct {
	Call
	queue     []event
	wake      chan struct{} // a new event is queued
	done      chan struct{} // closed when the call ends
	commanded chan struct{} // closed at the first command (an inbound call stops waiting)
	answers   map[string]answer
	stream    context.Context
	endStream context.CancelFunc
	ring      time.Duration // timeout_secs
	limit     time.Duration // time_limit_secs
}

// answer is a command's answer, kept for its command_id.
type answer struct {
	status int
	body   any
}

// newCallLocked registers a call and starts delivering its events.
func (s *Server) newCallLocked(direction, from, to, ccid string) *call {
	if ccid == "" {
		ccid = NewCallControlID()
	}
	c := &call{Call: Call{CallControlID: ccid,
		CallLegID: randomUUID(), CallSessionID: randomUUID(), Direction: direction, From: from, To: to,
		Alive: true, Started: s.opts.Now()},
		wake: make(chan struct{}, 1), done: make(chan struct{}), commanded: make(chan struct{}), answers: map[string]answer{}}
	c.stream, c.endStream = context.WithCancel(s.ctx)
	s.calls[c.CallControlID] = c
	s.order = append(s.order, c.CallControlID)
	s.wg.Add(1)
	go s.deliverAll(c)
	return c
}

// NewCallControlID is a fresh call_control_id in Telnyx's shape.
func NewCallControlID() string {
	return "v3:" + base64.RawURLEncoding.EncodeToString([]byte(randomHex(16)))
}

// snapshot copies the call's public state.
func (c *call) snapshot() Call {
	out := c.Call
	out.Commands = slices.Clone(c.Commands)
	out.Streams = slices.Clone(c.Streams)
	out.Events = slices.Clone(c.Events)
	return out
}

// endLocked ends a live call with call.hangup; it reports whether the call was alive.
func (s *Server) endLocked(c *call, cause, source string) bool {
	if !c.Alive {
		return false
	}
	now := s.opts.Now()
	c.State, c.HangupCause, c.HangupSource = "hangup", cause, source
	s.emitLocked(c, "call.hangup", map[string]any{"hangup_cause": cause, "hangup_source": source,
		"sip_hangup_cause": sipCause(cause), "start_time": c.Started.UTC().Format(time.RFC3339Nano),
		"end_time": now.UTC().Format(time.RFC3339Nano)})
	c.finishLocked(now)
	s.changedLocked()
	return true
}

// finishLocked marks the call over and stops its stream.
func (c *call) finishLocked(now time.Time) {
	if c.Alive {
		c.Alive, c.Ended = false, now
		close(c.done)
	}
	c.endStream()
}

// sipCause is the SIP status that goes with a hangup cause.
func sipCause(cause string) string {
	switch cause {
	case "user_busy":
		return "486"
	case "originator_cancel":
		return "487"
	case "timeout", "no_answer":
		return "480"
	case "call_rejected":
		return "603"
	}
	return "200"
}

// handsetSide is the hangup_source of a hangup Handset commands: it placed outgoing calls.
func handsetSide(c *call) string {
	if c.Direction == "outgoing" {
		return "caller"
	}
	return "callee"
}

// farSide is the other party's hangup_source.
func farSide(c *call) string {
	if c.Direction == "outgoing" {
		return "callee"
	}
	return "caller"
}

// wait pauses d or until the call ends or the fake closes; it reports whether the call is
// still going.
func (s *Server) wait(c *call, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return s.ctx.Err() == nil
	case <-c.done:
	case <-s.ctx.Done():
	}
	return false
}

// dialBody is POST /calls.
type dialBody struct {
	ConnectionID string `json:"connection_id"`
	To           string `json:"to"`
	From         string `json:"from"`
	TimeoutSecs  *int   `json:"timeout_secs"`
	TimeLimit    *int   `json:"time_limit_secs"`
	WebhookURL   string `json:"webhook_url"`
	ClientState  string `json:"client_state"`
	CommandID    string `json:"command_id"`
	AMD          string `json:"answering_machine_detection"`
}

// dial places an outbound call.
func (s *Server) dial(w http.ResponseWriter, r *http.Request) {
	var b dialBody
	if !readJSON(r, &b) {
		writeError(w, http.StatusUnprocessableEntity, CodeInvalidBody, "Invalid request body", "The body is not a JSON object of this request.")
		return
	}
	bad := func(field, detail string) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": []map[string]any{{"code": CodeInvalidBody,
			"title": "Invalid value", "detail": detail, "source": map[string]string{"pointer": "/" + field}}}})
		if rec, ok := w.(*recorder); ok {
			rec.code = CodeInvalidBody
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.dials[b.CommandID]; ok && b.CommandID != "" {
		writeJSON(w, http.StatusOK, map[string]any{"data": callData(s.calls[id], s.opts.Now())})
		return
	}
	switch {
	case b.ConnectionID == "":
		bad("connection_id", "connection_id is required.")
	case b.ConnectionID != s.opts.ConnectionID:
		bad("connection_id", "No Call Control Application "+b.ConnectionID+".")
	case !validE164(b.To):
		bad("to", "to must be a phone number in E.164 format.")
	case s.numberLocked(b.From) == nil:
		bad("from", "from must be a number of the account.")
	case b.AMD != "" && !slices.Contains(amdModes, b.AMD):
		bad("answering_machine_detection", "Unknown answering_machine_detection "+b.AMD+".")
	case b.TimeoutSecs != nil && *b.TimeoutSecs <= 0, b.TimeLimit != nil && *b.TimeLimit <= 0:
		bad("timeout_secs", "timeout_secs and time_limit_secs must be positive.")
	case !validClientState(b.ClientState):
		bad("client_state", "client_state must be base64.")
	case b.WebhookURL != "" && !httpURL(b.WebhookURL):
		bad("webhook_url", "webhook_url must be an http(s) URL.")
	default:
		c := s.newCallLocked("outgoing", b.From, b.To, "")
		c.State, c.ClientState, c.WebhookURL, c.AMD = "bridging", b.ClientState, b.WebhookURL, cmpOr(b.AMD, "disabled")
		c.ring, c.limit = seconds(b.TimeoutSecs, defaultRingTimeout), seconds(b.TimeLimit, defaultTimeLimit)
		if b.CommandID != "" {
			s.dials[b.CommandID] = c.CallControlID
		}
		callee := Callee{}
		if s.opts.Callee != nil {
			callee = s.opts.Callee(b.To)
		}
		s.emitLocked(c, "call.initiated", initiatedFields(c, ""))
		s.changedLocked()
		s.wg.Add(1)
		go s.runOutbound(c, callee)
		writeJSON(w, http.StatusOK, map[string]any{"data": callData(c, s.opts.Now())})
	}
}

func seconds(v *int, def time.Duration) time.Duration {
	if v == nil {
		return def
	}
	return time.Duration(*v) * time.Second
}

func validClientState(v string) bool {
	_, err := base64.StdEncoding.DecodeString(v)
	return err == nil && len(v) <= 4096
}

func httpURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// callData is a call as the REST API shows it.
func callData(c *call, now time.Time) map[string]any {
	end := c.Ended
	if c.Alive {
		end = now
	}
	dur := 0
	if c.Answered {
		dur = int(end.Sub(c.AnsweredAt) / time.Second)
	}
	return map[string]any{"record_type": "call", "call_control_id": c.CallControlID, "call_leg_id": c.CallLegID,
		"call_session_id": c.CallSessionID, "is_alive": c.Alive, "call_duration": dur}
}

// initiatedFields are call.initiated's fields beyond the common ones, as a real one has.
func initiatedFields(c *call, attestation string) map[string]any {
	f := map[string]any{"caller_id_name": c.From, "calling_party_type": "pstn", "connection_codecs": "PCMU,PCMA,G722,OPUS",
		"offered_codecs": "PCMU,G729", "from_sip_uri": c.From + "@sip.telnyx.com", "to_sip_uri": c.To + "@sip.telnyx.com",
		"start_time": c.Started.UTC().Format(time.RFC3339Nano)}
	if attestation != "" {
		f["shaken_stir_attestation"], f["shaken_stir_validated"] = attestation, true
	}
	return f
}

// runOutbound follows an outbound call's callee: ring, the outcome, the answer and its
// machine detection, then the callee's hang-up or the time limit.
func (s *Server) runOutbound(c *call, callee Callee) {
	defer s.wg.Done()
	ring := callee.RingFor
	if ring <= 0 {
		ring = DefaultRing
	}
	if callee.Outcome == OutcomeNoAnswer || ring >= c.ring {
		if s.wait(c, c.ring) {
			s.mu.Lock()
			s.endLocked(c, "timeout", "callee")
			s.mu.Unlock()
		}
		return
	}
	if !s.wait(c, ring) {
		return
	}
	s.mu.Lock()
	switch callee.Outcome {
	case OutcomeBusy:
		s.endLocked(c, "user_busy", "callee")
		s.mu.Unlock()
		return
	case OutcomeFailed:
		s.endLocked(c, "call_rejected", "callee")
		s.mu.Unlock()
		return
	}
	if !c.Alive {
		s.mu.Unlock()
		return
	}
	c.State, c.Answered, c.AnsweredAt = "answered", true, s.opts.Now()
	s.emitLocked(c, "call.answered", map[string]any{"codec": "PCMU", "sampling_rate": 8000,
		"start_time": c.Started.UTC().Format(time.RFC3339Nano)})
	s.changedLocked()
	amd := c.AMD
	s.mu.Unlock()

	if amd != "disabled" && !s.detect(c, amd, callee) {
		return
	}
	stay := c.limit
	if callee.Hold > 0 && callee.Hold < stay {
		stay = callee.Hold
	}
	if s.wait(c, stay) {
		s.mu.Lock()
		if stay == c.limit {
			s.endLocked(c, "time_limit", "unknown")
		} else {
			s.endLocked(c, "normal_clearing", "callee")
		}
		s.mu.Unlock()
	}
}

// detect sends the machine detection events mode asks for; it reports whether the call
// is still going.
func (s *Server) detect(c *call, mode string, callee Callee) bool {
	if !s.wait(c, s.opts.DetectionTime) {
		return false
	}
	typ, result := "call.machine.detection.ended", "human"
	if mode == "premium" {
		typ, result = "call.machine.premium.detection.ended", "human_residence"
	}
	if callee.Machine {
		result = "machine"
	}
	if !s.emitAlive(c, typ, result) {
		return false
	}
	if !callee.Machine || (mode != "detect_beep" && mode != "greeting_end" && mode != "detect_words" && mode != "premium") {
		return true
	}
	greeting := callee.Greeting
	if greeting <= 0 {
		greeting = defaultGreeting
	}
	if !s.wait(c, greeting) {
		return false
	}
	typ = "call.machine.greeting.ended"
	if mode == "premium" {
		typ = "call.machine.premium.greeting.ended"
	}
	return s.emitAlive(c, typ, "beep_detected")
}

// emitAlive sends a machine detection event with result while the call is alive.
func (s *Server) emitAlive(c *call, typ, result string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.Alive {
		return false
	}
	c.Verdict = result
	s.emitLocked(c, typ, map[string]any{"result": result})
	s.changedLocked()
	return true
}

// Ring places an inbound call from `from` to the account's number `to`, which must be on
// the application: call.initiated (state parked) goes to the application's webhook URL,
// and the call waits FirstCommandTimeout for a command before it is dropped.
func (s *Server) Ring(ctx context.Context, from, to string, o RingOptions) (Call, error) {
	if !validE164(from) && from != Withheld {
		return Call{}, errors.New("telnyxsim: from " + from + " is not E.164")
	}
	if len(o.CallControlID) > 200 {
		return Call{}, errors.New("telnyxsim: call_control_id too long")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return Call{}, errors.New("telnyxsim: closed")
	}
	n := s.numberLocked(to)
	_, taken := s.calls[o.CallControlID]
	switch {
	case taken:
		return Call{}, errors.New("telnyxsim: call " + o.CallControlID + " exists already")
	case n == nil:
		return Call{}, errors.New("telnyxsim: " + to + " is not a number of the account")
	case n.ConnectionID != s.opts.ConnectionID:
		return Call{}, errors.New("telnyxsim: " + to + " is not on the Call Control Application")
	case s.app.webhookURL == "":
		return Call{}, errors.New("telnyxsim: the application has no webhook URL")
	}
	c := s.newCallLocked("incoming", from, to, o.CallControlID)
	c.State = "parked"
	s.emitLocked(c, "call.initiated", initiatedFields(c, o.Attestation))
	s.changedLocked()
	s.wg.Add(1)
	go s.runInbound(c)
	return c.snapshot(), nil
}

// runInbound drops a parked call nobody commands in time.
func (s *Server) runInbound(c *call) {
	defer s.wg.Done()
	t := time.NewTimer(s.opts.FirstCommandTimeout)
	defer t.Stop()
	select {
	case <-t.C:
		s.mu.Lock()
		s.endLocked(c, "timeout", "unknown")
		s.mu.Unlock()
	case <-c.commanded:
	case <-c.done:
	case <-s.ctx.Done():
	}
}

// Hangup ends call ccid from source's side ("caller" or "callee"): call.hangup with
// hangup_cause normal_clearing. An unknown or ended call is left alone.
func (s *Server) Hangup(ccid, source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.calls[ccid]; ok {
		s.endLocked(c, "normal_clearing", source)
	}
}

// Calls are every call, in the order they began.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.calls[id].snapshot())
	}
	return out
}

// Call is call ccid.
func (s *Server) Call(ccid string) (Call, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.calls[ccid]
	if !ok {
		return Call{}, false
	}
	return c.snapshot(), true
}

// WaitCall blocks until call ccid exists and satisfies cond, or ctx ends.
func (s *Server) WaitCall(ctx context.Context, ccid string, cond func(Call) bool) (Call, error) {
	for {
		s.mu.Lock()
		c, ok := s.calls[ccid]
		var snap Call
		if ok {
			snap = c.snapshot()
		}
		changed := s.changed
		s.mu.Unlock()
		if ok && cond(snap) {
			return snap, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return snap, ctx.Err()
		}
	}
}

// TransferredTo is the number call ccid was transferred to; "" if none.
func (s *Server) TransferredTo(ccid string) string {
	c, _ := s.Call(ccid)
	return c.TransferredTo
}

// fetchCall is GET /calls/{id}.
func (s *Server) fetchCall(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.calls[r.PathValue("id")]
	if !ok || (!c.Alive && s.opts.EndedCallsNotFound) {
		writeError(w, http.StatusNotFound, CodeNotFound, "Resource not found", "No call "+r.PathValue("id")+".")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": callData(c, s.opts.Now())})
}

// commandBody is every field the fake reads from a command.
type commandBody struct {
	ClientState                     string `json:"client_state"`
	CommandID                       string `json:"command_id"`
	To                              string `json:"to"`
	From                            string `json:"from"`
	TimeoutSecs                     int    `json:"timeout_secs"`
	StreamURL                       string `json:"stream_url"`
	StreamTrack                     string `json:"stream_track"`
	StreamCodec                     string `json:"stream_codec"`
	StreamBidirectionalMode         string `json:"stream_bidirectional_mode"`
	StreamBidirectionalCodec        string `json:"stream_bidirectional_codec"`
	StreamBidirectionalSamplingRate int    `json:"stream_bidirectional_sampling_rate"`
	StreamBidirectionalTargetLegs   string `json:"stream_bidirectional_target_legs"`
	StreamAuthToken                 string `json:"stream_auth_token"`
}

// okAnswer is a command's success body (UNCONFIRMED shape; clients read the status).
var okAnswer = map[string]any{"data": map[string]string{"result": "ok"}}

// command is POST /calls/{id}/actions/{action}.
func (s *Server) command(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	var b commandBody
	if !readJSON(r, &b) {
		writeError(w, http.StatusUnprocessableEntity, CodeInvalidBody, "Invalid request body", "The body is not a JSON object of this command.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.calls[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, CodeNotFound, "Resource not found", "No call "+r.PathValue("id")+".")
		return
	}
	if a, seen := c.answers[b.CommandID]; seen && b.CommandID != "" {
		writeJSON(w, a.status, a.body)
		return
	}
	if action == "hangup" && s.opts.HangupRace && c.Alive {
		s.endLocked(c, "normal_clearing", farSide(c))
	}
	if !c.Alive {
		writeError(w, http.StatusUnprocessableEntity, CodeCallEnded, "Call has already ended", "This call is no longer active and can't receive commands.")
		return
	}
	if !validClientState(b.ClientState) {
		writeError(w, http.StatusUnprocessableEntity, CodeInvalidBody, "Invalid value", "client_state must be base64.")
		return
	}
	status, title, detail := s.applyLocked(c, action, b)
	if status != http.StatusOK {
		writeError(w, status, CodeInvalidCommand, title, detail)
		return
	}
	select {
	case <-c.commanded:
	default:
		close(c.commanded)
	}
	c.Commands = append(c.Commands, action)
	if b.ClientState != "" {
		c.ClientState = b.ClientState
	}
	if b.CommandID != "" {
		c.answers[b.CommandID] = answer{status: http.StatusOK, body: okAnswer}
	}
	s.changedLocked()
	writeJSON(w, http.StatusOK, okAnswer)
}

// applyLocked carries out one command on a live call: 200, or why not.
func (s *Server) applyLocked(c *call, action string, b commandBody) (status int, title, detail string) {
	switch action {
	case "answer":
		if c.Direction != "incoming" || c.State != "parked" {
			return http.StatusUnprocessableEntity, "Invalid call state", "Only a parked incoming call can be answered."
		}
		if b.StreamURL != "" {
			if msg := checkStream(b); msg != "" {
				return http.StatusUnprocessableEntity, "Invalid value", msg
			}
		}
		if b.ClientState != "" {
			c.ClientState = b.ClientState
		}
		c.State, c.Answered, c.AnsweredAt = "answered", true, s.opts.Now()
		s.emitLocked(c, "call.answered", map[string]any{"codec": "PCMU", "sampling_rate": 8000,
			"start_time": c.Started.UTC().Format(time.RFC3339Nano)})
		if b.StreamURL != "" {
			s.openStreamLocked(c, b)
		}
	case "hangup":
		s.endLocked(c, "normal_clearing", handsetSide(c))
	case "transfer":
		if !c.Answered {
			return http.StatusUnprocessableEntity, "Invalid call state", "Only an answered call can be transferred."
		}
		if !validE164(b.To) {
			return http.StatusUnprocessableEntity, "Invalid value", "to must be a phone number in E.164 format."
		}
		c.TransferredTo = b.To
		s.emitLocked(c, "call.bridged", map[string]any{"to": b.To})
	case "streaming_start":
		if !c.Answered {
			return http.StatusUnprocessableEntity, "Invalid call state", "Only an answered call can stream."
		}
		if msg := checkStream(b); msg != "" {
			return http.StatusUnprocessableEntity, "Invalid value", msg
		}
		s.openStreamLocked(c, b)
	case "streaming_stop":
		c.endStream()
		c.stream, c.endStream = context.WithCancel(s.ctx)
		s.emitLocked(c, "streaming.stopped", nil)
	default:
		return http.StatusUnprocessableEntity, "Unsupported command", "The fake does not carry out " + action + "."
	}
	return http.StatusOK, "", ""
}

// checkStream refuses a stream order Telnyx would refuse; "" when it is fine. A
// bidirectional mode other than rtp is accepted, as Telnyx accepts it (and then plays
// only MP3 files).
func checkStream(b commandBody) string {
	u, err := url.Parse(b.StreamURL)
	switch {
	case b.StreamURL == "" || err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "":
		return "stream_url must be a ws(s) URL."
	case b.StreamCodec != "" && !slices.Contains(streamCodecs, b.StreamCodec):
		return "Unknown stream_codec " + b.StreamCodec + "."
	case b.StreamBidirectionalCodec != "" && !slices.Contains(streamCodecs, b.StreamBidirectionalCodec):
		return "Unknown stream_bidirectional_codec " + b.StreamBidirectionalCodec + "."
	case !slices.Contains(streamRates, b.StreamBidirectionalSamplingRate):
		return "stream_bidirectional_sampling_rate must be 8000, 16000 or 24000, not " + strconv.Itoa(b.StreamBidirectionalSamplingRate) + "."
	}
	return ""
}

// openStreamLocked records a stream order and hands it to OpenStream.
func (s *Server) openStreamLocked(c *call, b commandBody) {
	o := StreamOrder{CallControlID: c.CallControlID, CallLegID: c.CallLegID, CallSessionID: c.CallSessionID,
		From: c.From, To: c.To, Direction: c.Direction, StreamURL: b.StreamURL, Track: cmpOr(b.StreamTrack, "inbound_track"),
		Codec: cmpOr(b.StreamCodec, "PCMU"), BidirectionalMode: cmpOr(b.StreamBidirectionalMode, "mp3"),
		BidirectionalCodec: cmpOr(b.StreamBidirectionalCodec, "PCMU"), SampleRate: b.StreamBidirectionalSamplingRate,
		TargetLegs: b.StreamBidirectionalTargetLegs, AuthToken: b.StreamAuthToken, ClientState: c.ClientState}
	if o.SampleRate == 0 {
		o.SampleRate = 8000
	}
	if b.ClientState != "" {
		o.ClientState = b.ClientState
	}
	c.Streams = append(c.Streams, o)
	s.emitLocked(c, "streaming.started", map[string]any{"stream_url": b.StreamURL})
	if s.opts.OpenStream == nil {
		return
	}
	ctx := c.stream
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.opts.OpenStream(ctx, o); err != nil && ctx.Err() == nil {
			s.mu.Lock()
			if c.Alive && !s.opts.NoStreamFailed {
				s.emitLocked(c, "streaming.failed", map[string]any{"failure_reason": err.Error()})
				s.changedLocked()
			}
			s.mu.Unlock()
		}
	}()
}
