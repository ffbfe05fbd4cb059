package faketwilio

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
)

// How one outbound call plays out, as Twilio does it: initiated, ringing, then the callee's
// Answer decides (busy, no-answer, failed, or answered); an answered call fetches its TwiML
// (https://www.twilio.com/docs/voice/twiml) and runs it verb by verb, <Connect><Stream>
// through twiliocaller; the call completes when the document runs out, on <Hangup> or
// <Dial>, when the callee hangs up, on a REST hangup or at TimeLimit. Status callbacks
// (https://www.twilio.com/docs/voice/api/call-resource#statuscallbackevent) go out from a
// second goroutine so a slow callback URL does not hold the call up, as on Twilio.

// maxDocuments bounds the TwiML documents one call runs, against <Redirect> loops.
const maxDocuments = 50

// runner plays one call out. Only its own goroutine touches its fields.
type runner struct {
	s     *Server
	c     *outCall
	ans   Answer
	ctx   context.Context
	clk   clock.Clock
	notes chan note // status callbacks for the sender; one slot per event, so never full
	seq   int       // SequenceNumber of the next callback

	answeredBy    string
	answeredAt    time.Time // on clk; zero until answered
	holdC, limitC <-chan time.Time
	timers        []clock.Timer
	acks          []chan struct{} // REST updates acted on, to acknowledge
	hangupBy      string
}

type note struct {
	event  string
	params url.Values
}

// interruption is why the runner stopped waiting: the call ends (by says who ended it) or
// a REST redirect names the next document.
type interruption struct {
	by       string
	redirect *source
}

// runCall plays c out and marks it done once its last status callback is answered.
func (s *Server) runCall(c *outCall) {
	defer s.calls.wg.Done()
	r := &runner{s: s, c: c, ctx: s.calls.ctx, clk: s.calls.clk, notes: make(chan note, len(callbackEvents))}
	delivered := make(chan struct{})
	go r.deliver(delivered)
	final := r.play()
	r.finish(final)
	close(r.notes)
	<-delivered
	s.mu.Lock()
	c.done = true
	s.callsChangedLocked()
	s.mu.Unlock()
	s.log.Debug("fake twilio call over", "call_sid", c.sid, "status", final, "hangup_by", r.hangupBy)
}

// play runs the call up to its final status.
func (r *runner) play() string {
	r.progress(StatusInitiated, "initiated")
	ans, err := r.answerFor()
	if err != nil {
		r.fail(CodeCallee, err.Error())
		return StatusFailed
	}
	r.ans = ans
	r.progress(StatusRinging, "ringing")
	ring, outcome := ans.RingFor, ans.Outcome
	if outcome == OutcomeAnswer && r.c.timeout > 0 && ring >= r.c.timeout {
		ring, outcome = r.c.timeout, OutcomeNoAnswer
	}
	if in := r.wait(ring); in != nil {
		r.stop(in)
		return StatusCanceled
	}
	if outcome != OutcomeAnswer {
		return string(outcome)
	}
	r.pickUp()
	r.runTwiML()
	return StatusCompleted
}

// answerFor asks Options.Answer about the callee and fills the defaults.
func (r *runner) answerFor() (Answer, error) {
	var a Answer
	if f := r.s.calls.answer; f != nil {
		a = f(r.c.to)
	}
	if a.Outcome == "" {
		a.Outcome = OutcomeAnswer
	}
	switch a.Outcome {
	case OutcomeAnswer, OutcomeBusy, OutcomeNoAnswer, OutcomeFailed:
	default:
		return a, fmt.Errorf("faketwilio: Answer.Outcome %q is not answer, busy, no-answer or failed", a.Outcome)
	}
	if a.RingFor <= 0 {
		a.RingFor = DefaultRing
	}
	if a.AnsweredBy == "" {
		a.AnsweredBy = "human"
	}
	if a.Talk == nil && a.Hold <= 0 {
		a.Hold = DefaultHold
	}
	return a, nil
}

// verdict is what machine detection mode md reports for a callee answered by by.
func verdict(md, by string) string {
	switch {
	case md == "":
		return ""
	case md == "Enable" && strings.HasPrefix(by, "machine_end"):
		return "machine_start" // Enable answers as soon as it hears a machine
	case md == "DetectMessageEnd" && by == "machine_start":
		return "machine_end_other" // DetectMessageEnd waits for the greeting to end
	}
	return by
}

// progress moves the call to status and sends event's callback.
func (r *runner) progress(status, event string) {
	s, c := r.s, r.c
	now := s.now().UTC()
	s.mu.Lock()
	c.status, c.updated = status, now
	if status == StatusInitiated {
		c.started = now
	}
	params := r.paramsLocked(status)
	s.callsChangedLocked()
	s.mu.Unlock()
	r.notify(event, params)
}

// pickUp answers the call and starts the callee's hold and the TimeLimit clocks.
func (r *runner) pickUp() {
	s, c := r.s, r.c
	r.answeredAt = r.clk.Now()
	r.answeredBy = verdict(c.md, r.ans.AnsweredBy)
	now := s.now().UTC()
	s.mu.Lock()
	c.status, c.answered, c.answeredBy, c.updated = StatusInProgress, now, r.answeredBy, now
	params := r.paramsLocked(StatusInProgress)
	s.callsChangedLocked()
	s.mu.Unlock()
	r.notify("answered", params)
	if r.ans.Hold > 0 {
		t := r.clk.NewTimer(r.ans.Hold)
		r.holdC, r.timers = t.C(), append(r.timers, t)
	}
	limit := c.timeLimit
	if limit <= 0 {
		limit = DefaultTimeLimit
	}
	t := r.clk.NewTimer(limit)
	r.limitC, r.timers = t.C(), append(r.timers, t)
}

// finish records the final status and sends the completed callback.
func (r *runner) finish(final string) {
	for _, t := range r.timers {
		t.Stop()
	}
	var talked time.Duration
	if !r.answeredAt.IsZero() {
		talked = r.clk.Now().Sub(r.answeredAt).Round(time.Second)
		if r.hangupBy == "" {
			r.hangupBy = HangupTwiML
		}
	}
	s, c := r.s, r.c
	now := s.now().UTC()
	s.mu.Lock()
	c.status, c.ended, c.updated, c.duration, c.hangupBy = final, now, now, talked, r.hangupBy
	if c.ctl != nil { // a REST update that came too late to act on
		r.acks = append(r.acks, c.ctl.applied)
		c.ctl = nil
	}
	params := r.paramsLocked(final)
	s.callsChangedLocked()
	s.mu.Unlock()
	r.ackAll()

	secs := int(talked / time.Second)
	params.Set("CallDuration", strconv.Itoa(secs))
	params.Set("Duration", strconv.Itoa((secs+59)/60)) // billed minutes, rounded up
	switch final {
	case StatusBusy:
		params.Set("SipResponseCode", "486")
	case StatusNoAnswer:
		params.Set("SipResponseCode", "487")
	case StatusFailed:
		params.Set("SipResponseCode", "500")
	}
	r.notify("completed", params)
}

// paramsLocked are the parameters of a status callback reporting status.
func (r *runner) paramsLocked(status string) url.Values {
	c := r.c
	v := url.Values{}
	v.Set("AccountSid", r.s.sid)
	v.Set("ApiVersion", "2010-04-01")
	v.Set("CallSid", c.sid)
	v.Set("CallStatus", status)
	v.Set("CallbackSource", "call-progress-events")
	v.Set("Called", c.to)
	v.Set("Caller", c.from)
	v.Set("Direction", "outbound-api")
	v.Set("From", c.from)
	v.Set("To", c.to)
	v.Set("Timestamp", twilioTime(r.s.now()))
	if c.answeredBy != "" {
		v.Set("AnsweredBy", c.answeredBy)
	}
	return v
}

// notify queues event's callback when the call asked for it: without StatusCallbackEvent,
// Twilio sends only completed.
func (r *runner) notify(event string, params url.Values) {
	c := r.c
	if c.statusCallback == "" {
		return
	}
	if len(c.events) == 0 && event != "completed" || len(c.events) > 0 && !slices.Contains(c.events, event) {
		return
	}
	params.Set("SequenceNumber", strconv.Itoa(r.seq))
	r.seq++
	r.notes <- note{event: event, params: params}
}

// deliver sends the status callbacks in order, one at a time.
func (r *runner) deliver(done chan<- struct{}) {
	defer r.s.calls.wg.Done()
	defer close(done)
	c := r.c
	// Only the signing key and the client: the runner's own fields are not this goroutine's.
	opts := twiliocaller.Options{AuthToken: r.s.token, HTTPClient: r.s.calls.client}
	for n := range r.notes {
		resp, err := twiliocaller.SendWebhook(r.ctx, opts, c.statusCallbackMethod, c.statusCallback, n.params)
		cb := StatusCallback{Event: n.event, Params: n.params, Status: resp.Status}
		if err != nil {
			cb.Err = err.Error()
		}
		r.s.mu.Lock()
		c.callbacks = append(c.callbacks, cb)
		r.s.callsChangedLocked()
		r.s.mu.Unlock()
	}
}

// callerOptions describe the call to twiliocaller: its webhooks carry the outbound-api
// parameters, and its streams use the fake's HTTP client and clock.
func (r *runner) callerOptions() twiliocaller.Options {
	params := map[string]string{"CallStatus": StatusInProgress, "Direction": "outbound-api"}
	if r.answeredBy != "" {
		params["AnsweredBy"] = r.answeredBy
	}
	s := r.s
	return twiliocaller.Options{
		AccountSid: s.sid, AuthToken: s.token, CallSid: r.c.sid, From: r.c.from, To: r.c.to,
		Params: params, InsecureStreamURL: s.calls.insecure, HTTPClient: s.calls.client,
		Clock: s.calls.clk, Logger: s.log,
	}
}

func (r *runner) fail(code int, msg string) {
	r.s.mu.Lock()
	r.c.errs = append(r.c.errs, CallError{Code: code, Message: msg})
	r.s.callsChangedLocked()
	r.s.mu.Unlock()
}

func (r *runner) ackAll() {
	for _, a := range r.acks {
		close(a)
	}
	r.acks = nil
}

// takeControl picks up the pending REST update, if any.
func (r *runner) takeControl() *interruption {
	r.s.mu.Lock()
	ctl := r.c.ctl
	r.c.ctl = nil
	r.s.mu.Unlock()
	if ctl == nil {
		return nil
	}
	r.acks = append(r.acks, ctl.applied)
	if ctl.hangup {
		return &interruption{by: HangupAPI}
	}
	return &interruption{redirect: &ctl.doc}
}

// wait lets d pass on the clock; an interruption cuts it short.
func (r *runner) wait(d time.Duration) *interruption {
	t := r.clk.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C():
			return nil
		case <-r.c.wake:
			if in := r.takeControl(); in != nil {
				return in
			}
		case <-r.holdC:
			return &interruption{by: HangupCallee}
		case <-r.limitC:
			return &interruption{by: HangupTimeLimit}
		case <-r.ctx.Done():
			return &interruption{by: HangupClose}
		}
	}
}

// poll is wait without the wait.
func (r *runner) poll() *interruption {
	select {
	case <-r.c.wake:
		return r.takeControl()
	case <-r.holdC:
		return &interruption{by: HangupCallee}
	case <-r.limitC:
		return &interruption{by: HangupTimeLimit}
	case <-r.ctx.Done():
		return &interruption{by: HangupClose}
	default:
		return nil
	}
}

// stop applies an interruption: the next document, or nil when the call ends.
func (r *runner) stop(in *interruption) *source {
	if in.by != "" {
		r.hangupBy = in.by
		return nil
	}
	return in.redirect
}

// runTwiML runs the call's document and whatever it redirects to.
func (r *runner) runTwiML() {
	r.s.mu.Lock()
	src := r.c.doc
	r.s.mu.Unlock()
	for range maxDocuments {
		r.ackAll() // a redirect is acknowledged once the stream it ended is gone
		verbs, ok := r.load(src)
		if !ok {
			return
		}
		next := r.execute(verbs, src)
		if next == nil {
			return
		}
		src = *next
	}
	r.fail(CodeDocumentParse, fmt.Sprintf("more than %d TwiML documents in one call: a <Redirect> loop?", maxDocuments))
}

// load fetches (or takes inline) one TwiML document and parses it; on failure the error
// is recorded and the call ends, as Twilio ends it after "an application error".
func (r *runner) load(src source) ([]node, bool) {
	body := []byte(src.twiml)
	if src.url != "" {
		opts := r.callerOptions()
		params := opts.WebhookParams()
		resp, err := twiliocaller.SendWebhook(r.ctx, opts, src.method, src.url, params)
		hook := Webhook{URL: src.url, Method: cmpOr(src.method, http.MethodPost), Params: params, Status: resp.Status}
		if err != nil {
			hook.Err = err.Error()
		}
		r.s.mu.Lock()
		r.c.webhooks = append(r.c.webhooks, hook)
		r.s.callsChangedLocked()
		r.s.mu.Unlock()
		ct := strings.ToLower(resp.ContentType)
		switch {
		case r.ctx.Err() != nil:
			r.hangupBy = HangupClose
			return nil, false
		case err != nil:
			r.fail(CodeHTTPRetrieval, err.Error())
			return nil, false
		case resp.Status < 200 || resp.Status > 299:
			r.fail(CodeHTTPRetrieval, fmt.Sprintf("%s answered %d", src.url, resp.Status))
			return nil, false
		case ct != "" && !strings.Contains(ct, "xml"):
			r.fail(CodeInvalidContentType, fmt.Sprintf("%s answered Content-Type %q, not XML", src.url, resp.ContentType))
			return nil, false
		}
		body = resp.Body
	}
	verbs, err := parseTwiML(body)
	if err != nil {
		r.fail(CodeDocumentParse, err.Error())
		return nil, false
	}
	return verbs, true
}

// execute runs one document's verbs and returns the next document, or nil when the call
// ends.
func (r *runner) execute(verbs []node, src source) *source {
	for i := range verbs {
		v := &verbs[i]
		if in := r.poll(); in != nil {
			return r.stop(in)
		}
		name := v.XMLName.Local
		r.s.mu.Lock()
		r.c.verbs = append(r.c.verbs, name)
		r.s.callsChangedLocked()
		r.s.mu.Unlock()
		switch name {
		case "Say", "Play": // nobody listens to the fake's callee
		case "Pause":
			if in := r.wait(pauseLength(v)); in != nil {
				return r.stop(in)
			}
		case "Hangup", "Reject":
			return nil
		case "Dial":
			if r.dial(v) {
				return nil
			}
		case "Redirect":
			next, ok := resolve(src.url, v.text())
			if !ok {
				r.fail(CodeHTTPRetrieval, fmt.Sprintf("<Redirect> to %q: not an absolute http(s) URL", v.text()))
				return nil
			}
			return &source{url: next, method: strings.ToUpper(v.attr("method"))}
		case "Connect":
			if next, over := r.connect(v, src); over {
				return next
			}
		default:
			r.fail(CodeUnsupportedVerb, fmt.Sprintf("<%s> is not run by the fake; skipped", name))
		}
	}
	return nil
}

// pauseLength is <Pause length> in seconds, default 1.
func pauseLength(v *node) time.Duration {
	if n, err := strconv.Atoi(v.attr("length")); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	return time.Second
}

// dial records the number a <Dial> connects the callee to; the fake's call ends there. A
// <Dial> without a number is an error, and the document goes on.
func (r *runner) dial(v *node) bool {
	number := v.text()
	for _, ch := range v.Nodes {
		if n := ch.XMLName.Local; n == "Number" || n == "Sip" || n == "Client" {
			number = ch.text()
			break
		}
	}
	if number == "" {
		r.fail(CodeUnsupportedVerb, "<Dial> names no number")
		return false
	}
	r.s.mu.Lock()
	r.c.transferTo, r.c.callerID = number, v.attr("callerId")
	r.s.callsChangedLocked()
	r.s.mu.Unlock()
	return true
}

// connect runs <Connect><Stream>. over is true when the document stops here: next is the
// document to run then (a redirect or <Connect action>), nil when the call ends. When
// Handset ends the stream itself, Twilio goes on with the verbs after </Connect>.
func (r *runner) connect(v *node, src source) (next *source, over bool) {
	var stream *node
	for i := range v.Nodes {
		if v.Nodes[i].XMLName.Local == "Stream" {
			stream = &v.Nodes[i]
			break
		}
	}
	if stream == nil {
		r.fail(CodeUnsupportedVerb, "<Connect> without <Stream> is not run by the fake; skipped")
		return nil, false
	}
	tw := twiliocaller.StreamTwiML{
		URL: stream.attr("url"), Name: stream.attr("name"), Track: stream.attr("track"),
		StatusCallback: stream.attr("statusCallback"), Parameters: map[string]string{}, Verbs: []string{"Connect"},
	}
	for _, p := range stream.Nodes {
		if p.XMLName.Local == "Parameter" {
			tw.Parameters[p.attr("name")] = p.attr("value")
		}
	}
	tc, err := twiliocaller.Connect(r.ctx, r.callerOptions(), tw)
	if err != nil {
		if r.ctx.Err() != nil {
			r.hangupBy = HangupClose
			return nil, true
		}
		r.fail(CodeStreamHandshake, err.Error())
		return nil, false
	}
	r.setStream(tc, 1)
	in := r.stream(tc)
	r.setStream(nil, 0)
	switch {
	case in != nil:
		return r.stop(in), true
	case r.ctx.Err() != nil: // Close dropped the stream
		r.hangupBy = HangupClose
		return nil, true
	}
	if err := tc.Err(); err != nil {
		r.fail(CodeStreamClosed, err.Error())
	}
	if action := v.attr("action"); action != "" {
		u, ok := resolve(src.url, action)
		if !ok {
			r.fail(CodeHTTPRetrieval, fmt.Sprintf("<Connect action> %q: not an absolute http(s) URL", action))
			return nil, true
		}
		return &source{url: u, method: strings.ToUpper(v.attr("method"))}, true
	}
	return nil, false
}

func (r *runner) setStream(tc *twiliocaller.Call, opened int) {
	r.s.mu.Lock()
	r.c.stream = tc
	r.c.streams += opened
	r.s.callsChangedLocked()
	r.s.mu.Unlock()
}

// stream holds the call on an open media stream until something ends it; nil means
// Handset ended it.
func (r *runner) stream(tc *twiliocaller.Call) *interruption {
	var talkDone chan struct{}
	ctx, cancel := context.WithCancel(r.ctx)
	if talk := r.ans.Talk; talk != nil {
		talkDone = make(chan struct{})
		r.s.calls.wg.Add(1) // the runner's own count is held, so Close cannot be past Wait
		go func() {
			defer r.s.calls.wg.Done()
			defer close(talkDone)
			if err := talk(ctx, tc); err != nil && ctx.Err() == nil && !errors.Is(err, twiliocaller.ErrEnded) {
				r.fail(CodeCallee, "talk: "+err.Error())
			}
		}()
	}
	in := r.during(tc, talkDone)
	cancel()
	if talkDone != nil {
		<-talkDone
	}
	return in
}

func (r *runner) during(tc *twiliocaller.Call, talkDone chan struct{}) *interruption {
	for {
		select {
		case <-tc.Done():
			return nil
		case <-talkDone:
			if _, ended := tc.Ending(); ended { // Talk saw the stream end first
				<-tc.Done()
				return nil
			}
			_ = tc.Hangup()
			return &interruption{by: HangupCallee}
		case <-r.c.wake:
			in := r.takeControl()
			if in == nil {
				continue
			}
			_ = tc.Hangup() // stop, then close: Twilio abandons the stream for the update
			return in
		case <-r.holdC:
			_ = tc.Hangup()
			return &interruption{by: HangupCallee}
		case <-r.limitC:
			_ = tc.Hangup()
			return &interruption{by: HangupTimeLimit}
		case <-r.ctx.Done():
			<-tc.Done()
			return &interruption{by: HangupClose}
		}
	}
}

// resolve makes ref absolute against the document URL base, as Twilio resolves relative
// <Redirect> and action URLs; ok is false for anything but an absolute http(s) URL.
func resolve(base, ref string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(ref))
	if err != nil || ref == "" {
		return "", false
	}
	if !u.IsAbs() {
		b, err := url.Parse(base)
		if err != nil || base == "" {
			return "", false
		}
		u = b.ResolveReference(u)
	}
	out := u.String()
	return out, callbackURL(out)
}

// node is one TwiML element with its attributes, text and children.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []node     `xml:",any"`
}

func (n *node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *node) text() string { return strings.TrimSpace(n.Text) }

// parseTwiML returns the verbs of a <Response> document.
func parseTwiML(body []byte) ([]node, error) {
	var root node
	if err := xml.NewDecoder(bytes.NewReader(body)).Decode(&root); err != nil {
		return nil, fmt.Errorf("TwiML is not XML: %w", err)
	}
	if root.XMLName.Local != "Response" {
		return nil, fmt.Errorf("TwiML root element is <%s>, want <Response>", root.XMLName.Local)
	}
	return root.Nodes, nil
}
