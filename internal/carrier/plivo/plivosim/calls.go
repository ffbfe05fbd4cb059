package plivosim

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// Outcome is what a called number does once it has rung.
type Outcome string

// Outcomes; the zero value answers.
const (
	OutcomeAnswer   Outcome = ""
	OutcomeBusy     Outcome = "busy"
	OutcomeNoAnswer Outcome = "no-answer" // rings until the call's ring timeout
	OutcomeFailed   Outcome = "failed"
)

// Callee is how one called number behaves.
type Callee struct {
	Outcome Outcome
	// RingFor is how long it rings first.
	RingFor time.Duration
	// Machine: an answering machine picks up (the verdict machine detection reports).
	Machine bool
	// Hold is how long the callee stays once answered, then hangs up; 0 is an hour.
	Hold time.Duration
}

// Call statuses as Plivo words them.
const (
	StatusQueued     = "queued"
	StatusRinging    = "ringing"
	StatusInProgress = "in-progress"
	StatusCompleted  = "completed"
	StatusBusy       = "busy"
	StatusNoAnswer   = "no-answer"
	StatusFailed     = "failed"
	StatusCancel     = "cancel"
)

// Ended reports whether a status is final.
func Ended(status string) bool {
	switch status {
	case StatusCompleted, StatusBusy, StatusNoAnswer, StatusFailed, StatusCancel:
		return true
	}
	return false
}

// Call is an outbound call as the fake holds it.
type Call struct {
	RequestUUID string // "" for a call that came in
	CallUUID    string // "" while a queued request
	// Direction is "outbound" for a call Handset placed, "inbound" for one that rang
	// Handset's number (Ring).
	Direction string
	From, To  string // E.164 with "+"
	Status    string
	// Detection is the machine_detection value asked for; Verdict the one reported
	// ("true"/"false"), once the callback was delivered.
	Detection, Verdict string
	// AnswerURL, HangupURL, RingURL and MachineURL are the URLs the call was placed
	// with.
	AnswerURL, HangupURL, RingURL, MachineURL string
	RingTimeout, TimeLimit                    int
	// Answered and Ended are when; BillDuration the answered seconds.
	Answered, Ended time.Time
	BillDuration    int
	// HangupCauseName and HangupSource say how it ended.
	HangupCauseName, HangupSource string
	// TransferredTo is the number a transfer's <Dial><Number> named, as written.
	TransferredTo string
	// Streams are the <Stream> orders its documents gave.
	Streams []StreamOrder
	// Callbacks are the requests the fake made to Handset for it, in order.
	Callbacks []Callback
	// Errors are what went wrong as Plivo would log it (bad XML, a failed fetch).
	Errors []string
}

// Callback is one request the fake made to Handset.
type Callback struct {
	Kind   string // answer, ring, hangup, machine, transfer
	URL    string
	Params url.Values
	Status int    // HTTP status of the answer; 0 when none
	Err    string // why none
	// Nonce and Signature are the V3 headers it carried, for a replay.
	Nonce, Signature string
}

// call is a call's live state, guarded by Server.mu.
type call struct {
	Call
	callee Callee
	ctl    chan control    // the REST side's orders to the runner
	ctx    context.Context // ends with the call; set when its runner starts
}

// control is an order to a call's runner.
type control struct {
	hangup   string // a hang-up's source ("API"); "" for a transfer
	alegURL  string // a transfer's new document
	canceled bool   // a queued request cancelled
}

func (s *Server) makeCall(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	from, to := f.Get("from"), f.Get("to")
	switch {
	case !digits(plain(from)) || !digits(plain(to)):
		writeError(w, http.StatusBadRequest, "from and to must be phone numbers")
		return
	case !absolute(f.Get("answer_url")):
		writeError(w, http.StatusBadRequest, "answer_url is required and must be an absolute URL")
		return
	}
	for _, field := range []string{"hangup_url", "ring_url", "machine_detection_url"} {
		if v := f.Get(field); v != "" && !absolute(v) {
			writeError(w, http.StatusBadRequest, field+" must be an absolute URL")
			return
		}
	}
	c := &call{ctl: make(chan control, 4)}
	c.Direction = "outbound"
	c.RequestUUID, c.From, c.To = newUUID(), "+"+plain(from), "+"+plain(to)
	c.AnswerURL, c.HangupURL, c.RingURL, c.MachineURL = f.Get("answer_url"), f.Get("hangup_url"), f.Get("ring_url"), f.Get("machine_detection_url")
	for field, to := range map[string]*int{"ring_timeout": &c.RingTimeout, "time_limit": &c.TimeLimit} {
		if v := f.Get(field); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				writeError(w, http.StatusBadRequest, field+" must be a positive integer")
				return
			}
			*to = n
		}
	}
	if v := f.Get("machine_detection"); v != "" {
		if !slices.Contains(s.detect, v) {
			writeError(w, http.StatusBadRequest, "invalid machine_detection value")
			return
		}
		if c.MachineURL == "" {
			writeError(w, http.StatusBadRequest, "machine_detection_url is required with machine_detection")
			return
		}
		c.Detection = v
	}
	c.callee = Callee{Hold: time.Hour}
	if s.o.Callee != nil {
		c.callee = s.o.Callee(c.To)
	}
	c.Status = StatusQueued
	s.mu.Lock()
	if s.numberLocked(plain(from)) == nil {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "from number is not a number of this account")
		return
	}
	s.calls = append(s.calls, c)
	s.changedLocked()
	s.mu.Unlock()
	s.wg.Add(1)
	go s.run(c)
	writeJSON(w, http.StatusCreated, map[string]any{"api_id": newUUID(), "message": "call fired", "request_uuid": c.RequestUUID})
}

func absolute(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// getCall answers the three reads of Call/{id}/: ?status=queued by request id,
// ?status=live by CallUUID, and the ended call's record without status.
func (s *Server) getCall(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Query().Get("status") {
	case "queued":
		c := s.byRequestLocked(id)
		if c == nil || c.Status != StatusQueued {
			writeError(w, http.StatusNotFound, "call not found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"api_id": newUUID(), "call_status": c.Status, "request_uuid": c.RequestUUID,
			"direction": "outbound", "from": plain(c.From), "to": plain(c.To)})
	case "live":
		c := s.byCallLocked(id)
		if c == nil || Ended(c.Status) || c.Status == StatusQueued {
			writeError(w, http.StatusNotFound, "call not found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"api_id": newUUID(), "call_status": c.Status, "call_uuid": c.CallUUID,
			"request_uuid": c.RequestUUID, "direction": "outbound", "from": plain(c.From), "to": plain(c.To),
			"session_start": c.Answered.UTC().Format("2006-01-02 15:04:05.999999")})
	case "":
		c := s.byCallLocked(id)
		if c == nil || !Ended(c.Status) {
			writeError(w, http.StatusNotFound, "call not found")
			return
		}
		rec := map[string]any{"api_id": newUUID(), "call_uuid": c.CallUUID, "from_number": plain(c.From), "to_number": plain(c.To),
			"call_direction": "outbound", "bill_duration": c.BillDuration, "call_duration": c.BillDuration,
			"end_time": stamp(c.Ended), "answer_time": nil, "hangup_cause_name": c.HangupCauseName, "hangup_source": c.HangupSource}
		if !c.Answered.IsZero() {
			rec["answer_time"] = stamp(c.Answered)
		}
		writeJSON(w, http.StatusOK, rec)
	default:
		writeError(w, http.StatusBadRequest, "status must be live or queued")
	}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05-07:00") }

func (s *Server) hangupCall(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c := s.byCallLocked(r.PathValue("id"))
	if c == nil || Ended(c.Status) || c.Status == StatusQueued {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "call not found")
		return
	}
	s.mu.Unlock()
	s.order(c, control{hangup: "API"})
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) cancelRequest(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c := s.byRequestLocked(r.PathValue("id"))
	if c == nil || c.Status != StatusQueued {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "request not found")
		return
	}
	s.mu.Unlock()
	s.order(c, control{canceled: true})
	w.WriteHeader(http.StatusNoContent)
}

// startStream opens a stream on a live call (POST Call/{uuid}/Stream/), as a <Stream>
// element would, alongside whatever its document is doing.
func (s *Server) startStream(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	n := node{Name: "Stream", Text: f.Get("service_url"), Attrs: map[string]string{}}
	for field, attr := range map[string]string{"bidirectional": "bidirectional", "audio_track": "audioTrack",
		"content_type": "contentType", "stream_timeout": "streamTimeout", "status_callback_url": "statusCallbackUrl",
		"status_callback_method": "statusCallbackMethod", "extra_headers": "extraHeaders"} {
		if v, ok := f[field]; ok {
			n.Attrs[attr] = v[0]
		}
	}
	order, warn, err := readStream(n)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	c := s.byCallLocked(r.PathValue("id"))
	if c == nil || c.Status != StatusInProgress {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "call not found")
		return
	}
	order.CallUUID, order.KeepCallAlive = c.CallUUID, true
	c.Streams = append(c.Streams, order)
	if warn != "" {
		c.Errors = append(c.Errors, warn)
	}
	ctx := c.ctx
	s.changedLocked()
	s.mu.Unlock()
	if open := s.o.OpenStream; open != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = open(ctx, order)
		}()
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"api_id": newUUID(), "message": "audio streaming started", "stream_id": newUUID()})
}

func (s *Server) transfer(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	s.mu.Lock()
	c := s.byCallLocked(r.PathValue("id"))
	live := c != nil && c.Status == StatusInProgress
	s.mu.Unlock()
	switch {
	case !live:
		writeError(w, http.StatusNotFound, "call not found")
		return
	case f.Get("legs") != "aleg" || !absolute(f.Get("aleg_url")):
		writeError(w, http.StatusBadRequest, "legs=aleg and an absolute aleg_url are required")
		return
	case f.Get("aleg_method") != "" && f.Get("aleg_method") != http.MethodPost && f.Get("aleg_method") != http.MethodGet:
		writeError(w, http.StatusBadRequest, "aleg_method must be GET or POST")
		return
	}
	s.order(c, control{alegURL: f.Get("aleg_url")})
	writeJSON(w, http.StatusAccepted, map[string]any{"api_id": newUUID(), "message": "call transferred"})
}

// order hands o to c's runner; orders beyond a few waiting are dropped, as a call
// already ending ignores more.
func (s *Server) order(c *call, o control) {
	select {
	case c.ctl <- o:
	default:
	}
}

func (s *Server) byRequestLocked(id string) *call {
	for _, c := range s.calls {
		if c.RequestUUID != "" && c.RequestUUID == id {
			return c
		}
	}
	return nil
}

func (s *Server) byCallLocked(id string) *call {
	for _, c := range s.calls {
		if c.CallUUID != "" && c.CallUUID == id {
			return c
		}
	}
	return nil
}

func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// snapshot copies c's public state; s.mu held.
func (c *call) snapshot() Call {
	out := c.Call
	out.Streams = slices.Clone(c.Streams)
	out.Callbacks = slices.Clone(c.Callbacks)
	out.Errors = slices.Clone(c.Errors)
	return out
}

// Calls is a snapshot of every call placed, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		out[i] = c.snapshot()
	}
	return out
}

// Call is the call known by ref, its request id or CallUUID.
func (s *Server) Call(ref string) (Call, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.findLocked(ref)
	if c == nil {
		return Call{}, false
	}
	return c.snapshot(), true
}

func (s *Server) findLocked(ref string) *call {
	if c := s.byRequestLocked(ref); c != nil {
		return c
	}
	return s.byCallLocked(ref)
}

// WaitCall blocks until the call known by ref satisfies cond, and returns it; an error
// when ctx ends first.
func (s *Server) WaitCall(ctx context.Context, ref string, cond func(Call) bool) (Call, error) {
	for {
		s.mu.Lock()
		ch := s.changed
		var snap Call
		found := false
		if c := s.findLocked(ref); c != nil {
			snap, found = c.snapshot(), true
		}
		s.mu.Unlock()
		if found && cond(snap) {
			return snap, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return snap, context.Cause(ctx)
		}
	}
}
