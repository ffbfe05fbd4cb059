package plivosim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultRingTimeout is how long a call rings when it was placed without ring_timeout.
const DefaultRingTimeout = 60

// runner drives one call from request to end.
type runner struct {
	s      *Server
	c      *call
	ctx    context.Context // ends with the call
	cancel context.CancelFunc
	hold   *time.Timer // the callee hangs up
	limit  <-chan time.Time
}

// run is the call's life: queued, dialled (ringing), the outcome, and when answered the
// documents it runs.
func (s *Server) run(c *call) {
	defer s.wg.Done()
	r := &runner{s: s, c: c}
	r.ctx, r.cancel = context.WithCancel(s.ctx)
	defer r.cancel()
	s.mu.Lock()
	c.ctx = r.ctx
	s.mu.Unlock()
	if c.Direction == "inbound" {
		r.answered() // Plivo fetches the answer URL as the call arrives
		return
	}

	if o, stopped := r.sleep(s.o.QueuedFor); stopped {
		if o.canceled {
			r.finish(StatusCancel, "Cancelled", "API")
		}
		return
	}
	s.mu.Lock()
	c.CallUUID = newUUID()
	s.mu.Unlock()
	if c.RingURL != "" {
		r.callback("ring", c.RingURL, r.params(StatusRinging, "Ring"))
	}
	r.publish(func() { c.Status = StatusRinging })

	timeout := time.Duration(cmpInt(c.RingTimeout, DefaultRingTimeout)) * time.Second
	callee := c.callee
	if callee.Outcome == OutcomeNoAnswer || callee.RingFor > timeout {
		if o, stopped := r.sleep(timeout); stopped {
			r.stopped(o)
			return
		}
		r.finish(StatusNoAnswer, "No Answer", "Callee")
		return
	}
	if o, stopped := r.sleep(callee.RingFor); stopped {
		r.stopped(o)
		return
	}
	switch callee.Outcome {
	case OutcomeBusy:
		r.finish(StatusBusy, "Busy Line", "Callee")
		return
	case OutcomeFailed:
		r.finish(StatusFailed, "Unallocated Number", "Carrier")
		return
	}
	r.answered()
}

// answered runs the answered call: the answer document, the machine verdict, orders.
func (r *runner) answered() {
	s, c := r.s, r.c
	r.publish(func() { c.Status, c.Answered = StatusInProgress, time.Now() })
	r.hold = time.NewTimer(cmpDur(c.callee.Hold, time.Hour))
	defer r.hold.Stop()
	if c.TimeLimit > 0 {
		t := time.NewTimer(time.Duration(c.TimeLimit) * time.Second)
		defer t.Stop()
		r.limit = t.C
	}
	verbs, ok := r.fetch("answer", c.AnswerURL, r.params(StatusInProgress, "StartApp"))
	if c.Detection != "" {
		s.wg.Add(1)
		go r.verdict()
	}
	if !ok {
		r.finish(StatusCompleted, "Error", "Plivo")
		return
	}
	r.execute(verbs)
}

// verdict POSTs the machine-detection verdict once the answer document was fetched.
func (r *runner) verdict() {
	defer r.s.wg.Done()
	if _, stopped := r.sleepCtx(r.s.o.MachineDelay); stopped {
		return
	}
	v := strconv.FormatBool(r.c.callee.Machine)
	p := r.params(StatusInProgress, "MachineDetection") // Event value unconfirmed
	p.Set("Machine", v)
	r.callback("machine", r.c.MachineURL, p)
	r.publish(func() { r.c.Verdict = v })
}

// execute runs a document's verbs until the call ends; a transfer replaces the rest.
func (r *runner) execute(verbs []node) {
	for len(verbs) > 0 {
		v := verbs[0]
		verbs = verbs[1:]
		var o control
		var stopped bool
		switch v.Name {
		case "Stream":
			order, warn, err := readStream(v)
			if err != nil {
				r.errorf("%v", err)
				r.finish(StatusCompleted, "Error", "Plivo")
				return
			}
			if warn != "" {
				r.errorf("%s", warn)
			}
			o, stopped = r.stream(order)
		case "Wait":
			n, err := strconv.Atoi(or(v.Attrs["length"], "1"))
			if err != nil || n < 1 {
				r.errorf("<Wait> length=%q is not a positive integer", v.Attrs["length"])
				n = 1
			}
			o, stopped = r.sleep(time.Duration(n) * time.Second)
		case "Dial":
			to := ""
			for _, k := range v.Kids {
				if k.Name == "Number" {
					to = strings.TrimSpace(k.Text)
					break
				}
			}
			if to == "" {
				r.errorf("<Dial> has no <Number>")
				continue
			}
			r.publish(func() { r.c.TransferredTo = to })
			o, stopped = r.sleep(-1) // bridged until someone hangs up
		case "Hangup":
			r.finish(StatusCompleted, "Normal Hangup", "Plivo")
			return
		default:
			r.errorf("<%s> is not modelled by the fake: skipped", v.Name)
			continue
		}
		if !stopped {
			continue
		}
		if o.alegURL == "" {
			r.stopped(o)
			return
		}
		next, ok := r.fetch("transfer", o.alegURL, r.params(StatusInProgress, "Redirect"))
		if !ok {
			r.finish(StatusCompleted, "Error", "Plivo")
			return
		}
		verbs = next
	}
	r.finish(StatusCompleted, "Normal Hangup", "Plivo") // fell through the document
}

// stream opens order's stream: it blocks while it runs when keepCallAlive is set, else
// the document goes on at once (and, falling through, hangs up).
func (r *runner) stream(order StreamOrder) (control, bool) {
	order.CallUUID = r.c.CallUUID
	r.publish(func() { r.c.Streams = append(r.c.Streams, order) })
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	if open := r.s.o.OpenStream; open != nil {
		r.s.wg.Add(1)
		go func() {
			defer r.s.wg.Done()
			defer close(done)
			if err := open(ctx, order); err != nil {
				r.errorf("stream: %v", err)
			}
		}()
	}
	if !order.KeepCallAlive {
		context.AfterFunc(r.ctx, cancel)
		return control{}, false
	}
	defer cancel()
	return r.wait(-1, done)
}

// sleep waits d (d < 0: for ever) unless the call is stopped first: an order, the
// callee hanging up, the time limit or the server closing.
func (r *runner) sleep(d time.Duration) (control, bool) { return r.wait(d, nil) }

// sleepCtx waits d or until the call ends.
func (r *runner) sleepCtx(d time.Duration) (struct{}, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return struct{}{}, false
	case <-r.ctx.Done():
		return struct{}{}, true
	}
}

// wait is sleep that also ends, not stopped, when done closes.
func (r *runner) wait(d time.Duration, done <-chan struct{}) (control, bool) {
	var elapsed <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		elapsed = t.C
	}
	var hold <-chan time.Time
	if r.hold != nil {
		hold = r.hold.C
	}
	select {
	case <-elapsed:
		return control{}, false
	case <-done:
		select { // an order sent as the stream ended (the caller's hang-up) wins
		case o := <-r.c.ctl:
			return o, true
		default:
		}
		return control{}, false
	case o := <-r.c.ctl:
		return o, true
	case <-hold:
		return control{hangup: "Callee"}, true
	case <-r.limit:
		return control{hangup: "Plivo"}, true
	case <-r.ctx.Done():
		return control{}, true
	}
}

// stopped ends the call as o says.
func (r *runner) stopped(o control) {
	switch {
	case r.ctx.Err() != nil: // the server closed: no more requests to Handset
		r.publish(func() { r.c.Status, r.c.Ended = StatusCompleted, time.Now() })
	case o.canceled, o.hangup != "" && r.c.Answered.IsZero():
		r.finish(StatusCancel, "Cancelled", or(o.hangup, "API"))
	case o.hangup == "Plivo":
		r.finish(StatusCompleted, "Time Limit Reached", "Plivo")
	default:
		r.finish(StatusCompleted, "Normal Hangup", or(o.hangup, "API"))
	}
}

// finish sends the hangup callback, then records the end.
func (r *runner) finish(status, cause, source string) {
	c := r.c
	end := time.Now()
	bill := 0
	if !c.Answered.IsZero() {
		bill = int(end.Sub(c.Answered).Round(time.Second) / time.Second)
	}
	if c.HangupURL != "" && r.s.ctx.Err() == nil {
		p := r.params(status, "Hangup")
		p.Set("HangupCauseName", cause)
		p.Set("HangupSource", source)
		p.Set("Duration", strconv.Itoa(bill))
		p.Set("BillDuration", strconv.Itoa(bill))
		p.Set("EndTime", stamp(end))
		if !c.Answered.IsZero() {
			p.Set("AnswerTime", stamp(c.Answered))
		}
		r.callback("hangup", c.HangupURL, p)
	}
	r.publish(func() {
		c.Status, c.Ended, c.BillDuration, c.HangupCauseName, c.HangupSource = status, end, bill, cause, source
	})
	r.cancel()
}

// params are the parameters every callback of the call carries.
func (r *runner) params(status, event string) url.Values {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	c := r.c
	p := url.Values{"From": {plain(c.From)}, "To": {plain(c.To)},
		"Direction": {or(c.Direction, "outbound")}, "CallStatus": {status}, "Event": {event}}
	if c.CallUUID != "" {
		p.Set("CallUUID", c.CallUUID)
	}
	if c.RequestUUID != "" {
		p.Set("RequestUUID", c.RequestUUID)
	}
	return p
}

// fetch POSTs p to rawURL and reads the document it answers.
func (r *runner) fetch(kind, rawURL string, p url.Values) ([]node, bool) {
	body, ok := r.callback(kind, rawURL, p)
	if !ok {
		return nil, false
	}
	verbs, err := parseDocument(body)
	if err != nil {
		r.errorf("%s document from %s: %v", kind, rawURL, err)
		return nil, false
	}
	return verbs, true
}

// callbackTimeout bounds one request to Handset.
const callbackTimeout = 15 * time.Second

// callback POSTs p, V3-signed, to rawURL and records it; it returns the answer's body
// when it was a 2xx.
func (r *runner) callback(kind, rawURL string, p url.Values) ([]byte, bool) {
	cb := Callback{Kind: kind, URL: rawURL, Params: p, Nonce: newNonce()}
	cb.Signature = SignV3(r.s.token, rawURL, p, cb.Nonce)
	body, err := r.s.Post(r.ctx, rawURL, p, cb.Nonce, cb.Signature)
	if err != nil {
		cb.Err = err.Error()
	} else {
		cb.Status = body.Status
	}
	r.publish(func() { r.c.Callbacks = append(r.c.Callbacks, cb) })
	if err != nil || body.Status/100 != 2 {
		r.errorf("%s callback to %s: %s%s", kind, rawURL, cb.Err, statusText(cb.Status))
		return nil, false
	}
	return body.Body, true
}

// Reply is Handset's answer to one of the fake's requests.
type Reply struct {
	Status int
	Body   []byte
}

// Post sends one form POST to Handset at rawURL (reached at Options.DialURL's mapping of
// it) with the V3 headers given (none when nonce is empty): the fake's requests, and a
// test's forged or replayed ones.
func (s *Server) Post(ctx context.Context, rawURL string, p url.Values, nonce, signature string) (Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, callbackTimeout)
	defer cancel()
	target := rawURL
	if s.o.DialURL != nil {
		target = s.o.DialURL(rawURL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(p.Encode()))
	if err != nil {
		return Reply{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if nonce != "" {
		req.Header.Set(NonceHeader, nonce)
		req.Header.Set(SignatureHeader, signature)
	}
	req.Header.Set("User-Agent", "PlivoHTTP/1.0 (plivosim)")
	resp, err := s.client.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	return Reply{Status: resp.StatusCode, Body: data}, err
}

func statusText(status int) string {
	if status == 0 {
		return ""
	}
	return fmt.Sprintf("HTTP %d", status)
}

func (r *runner) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.s.log.Warn("plivosim: "+msg, "call", r.c.RequestUUID)
	r.publish(func() { r.c.Errors = append(r.c.Errors, msg) })
}

// publish changes the call under the lock and wakes the waiters.
func (r *runner) publish(change func()) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	change()
	r.s.changedLocked()
}

func cmpInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func cmpDur(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}
