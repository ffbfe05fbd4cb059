package twilio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// Outbound calls through the Calls resource:
// https://www.twilio.com/docs/voice/api/call-resource (create, fetch, update) and
// https://www.twilio.com/docs/voice/answering-machine-detection.

// ErrorCodeCallNotInProgress is Twilio's answer to updating a call that has already ended
// ("Call is not in-progress. Cannot redirect.").
const ErrorCodeCallNotInProgress = 21220

// Machine detection modes of CallRequest.MachineDetection.
const (
	// MachineDetectionEnable reports as soon as it knows (AnsweredBy machine_start).
	MachineDetectionEnable = "Enable"
	// MachineDetectionMessageEnd waits for the greeting's end (machine_end_beep, …), to
	// leave a message.
	MachineDetectionMessageEnd = "DetectMessageEnd"
)

// statusCallbackEvents are every call progress event Twilio can report, all asked for so
// Handset follows the call from dialling to the end.
var statusCallbackEvents = []string{"initiated", "ringing", "answered", "completed"}

// CallRequest places one outbound call (POST /2010-04-01/Accounts/{sid}/Calls.json).
type CallRequest struct {
	// To and From are phone numbers, written loosely or in E.164 (see carrier.NormalizeNumber);
	// From must be one of the account's numbers or a verified caller ID.
	To, From string
	// URL is the absolute http(s) TwiML webhook, fetched with POST when the call is
	// answered. Exactly one of URL and Twiml is set.
	URL string
	// Twiml is the TwiML document to run when the call is answered, instead of URL.
	Twiml string
	// StatusCallback, when set, is the absolute URL Twilio POSTs the call's progress to
	// (initiated, ringing, answered, completed).
	StatusCallback string
	// MachineDetection is "", MachineDetectionEnable or MachineDetectionMessageEnd.
	MachineDetection string
	// Timeout is how long the phone may ring, sent in whole seconds rounded up; 0 leaves
	// Twilio's default (60 s).
	Timeout time.Duration
	// TimeLimit caps the call's length, in whole seconds rounded up; 0 leaves Twilio's
	// default (4 hours).
	TimeLimit time.Duration
}

// CallInfo is a call resource as Twilio returns it.
type CallInfo struct {
	SID, AccountSID string
	To, From        string
	// Status is queued, initiated, ringing, in-progress, completed, busy, no-answer,
	// failed or canceled; see CallEnded.
	Status string
	// Direction is outbound-api for calls placed with CreateCall.
	Direction string
	// AnsweredBy is the machine-detection verdict (human, machine_start, …); empty
	// without detection or before the answer.
	AnsweredBy    string
	ParentCallSID string
	// Duration is how long the call lasted, in whole seconds; 0 until it has ended.
	Duration time.Duration
	// DateCreated, StartTime and EndTime are zero when Twilio has none yet.
	DateCreated, StartTime, EndTime time.Time
}

// CallEnded reports whether a call status is final: completed, busy, failed, no-answer or
// canceled.
func CallEnded(status string) bool {
	switch status {
	case "completed", "busy", "failed", "no-answer", "canceled":
		return true
	}
	return false
}

// CreateCall places an outbound call and returns it as Twilio queued it. Numbers, URLs,
// the machine-detection mode and durations are checked first: a bad one is a KindBadInput
// error and no request is made.
func (r *REST) CreateCall(ctx context.Context, req CallRequest) (CallInfo, error) {
	const op = "create call"
	form, err := req.form()
	if err != nil {
		return CallInfo{}, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err}
	}
	return r.callDo(ctx, op, http.MethodPost, r.accountPath()+"/Calls.json", form)
}

// form checks req and writes it as Twilio's create form.
func (req CallRequest) form() (url.Values, error) {
	to, err := carrier.NormalizeNumber(req.To)
	if err != nil {
		return nil, fmt.Errorf("To: %w", err)
	}
	from, err := carrier.NormalizeNumber(req.From)
	if err != nil {
		return nil, fmt.Errorf("From: %w", err)
	}
	form := url.Values{"To": {to}, "From": {from}}
	switch {
	case req.URL != "" && req.Twiml != "":
		return nil, errors.New("set either URL or Twiml, not both")
	case req.URL != "":
		if err := absoluteURL("URL", req.URL); err != nil {
			return nil, err
		}
		form.Set("Url", req.URL)
		form.Set("Method", http.MethodPost)
	case strings.TrimSpace(req.Twiml) != "":
		form.Set("Twiml", req.Twiml)
	default:
		return nil, errors.New("no TwiML for the call: set URL (the voice webhook) or Twiml")
	}
	if req.StatusCallback != "" {
		if err := absoluteURL("StatusCallback", req.StatusCallback); err != nil {
			return nil, err
		}
		form.Set("StatusCallback", req.StatusCallback)
		form.Set("StatusCallbackMethod", http.MethodPost)
		form["StatusCallbackEvent"] = append([]string(nil), statusCallbackEvents...)
	}
	switch req.MachineDetection {
	case "":
	case MachineDetectionEnable, MachineDetectionMessageEnd:
		form.Set("MachineDetection", req.MachineDetection)
	default:
		return nil, fmt.Errorf("MachineDetection %q is not valid: use %q, %q or leave it empty",
			req.MachineDetection, MachineDetectionEnable, MachineDetectionMessageEnd)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Timeout", req.Timeout}, {"TimeLimit", req.TimeLimit}} {
		switch {
		case d.v < 0:
			return nil, fmt.Errorf("%s %v is negative", d.name, d.v)
		case d.v > 0:
			form.Set(d.name, strconv.FormatInt(int64((d.v+time.Second-1)/time.Second), 10))
		}
	}
	return form, nil
}

// absoluteURL checks that v is an absolute http(s) URL, which Twilio requires.
func absoluteURL(field, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("%s %q is not an absolute http(s) URL", field, v)
	}
	return nil
}

// FetchCall returns call callSID (CA…) as Twilio holds it now.
func (r *REST) FetchCall(ctx context.Context, callSID string) (CallInfo, error) {
	const op = "fetch call"
	if err := checkCallSID(op, callSID); err != nil {
		return CallInfo{}, err
	}
	return r.callDo(ctx, op, http.MethodGet, r.callPath(callSID), nil)
}

// RedirectCall replaces what a live call is doing with the TwiML document twiml: Twilio
// ends the current <Connect><Stream> (the stream gets stop) and runs the new document. A
// call that has ended answers with Twilio error 21220.
func (r *REST) RedirectCall(ctx context.Context, callSID, twiml string) (CallInfo, error) {
	const op = "redirect call"
	if err := checkCallSID(op, callSID); err != nil {
		return CallInfo{}, err
	}
	if strings.TrimSpace(twiml) == "" {
		return CallInfo{}, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput,
			Err: errors.New("no TwiML to redirect the call to")}
	}
	return r.callDo(ctx, op, http.MethodPost, r.callPath(callSID), url.Values{"Twiml": {twiml}})
}

// HangupCall ends call callSID (Status=completed). A call that has already ended (Twilio
// answers 404/20404 or 21220) counts as hung up: the caller wanted it over, and it is.
func (r *REST) HangupCall(ctx context.Context, callSID string) error {
	const op = "hang up call"
	if err := checkCallSID(op, callSID); err != nil {
		return err
	}
	_, err := r.callDo(ctx, op, http.MethodPost, r.callPath(callSID), url.Values{"Status": {"completed"}})
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Code == ErrorCodeNotFound || ae.Code == ErrorCodeCallNotInProgress) {
		return nil
	}
	return err
}

func (r *REST) callPath(sid string) string { return r.accountPath() + "/Calls/" + sid + ".json" }

func checkCallSID(op, sid string) error {
	if validSID(sid, "CA") {
		return nil
	}
	return &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput,
		Err: fmt.Errorf("%q is not a call SID (CA followed by 32 hexadecimal digits)", sid)}
}

// callDo sends one Calls request and reads the call from the answer.
func (r *REST) callDo(ctx context.Context, op, method, path string, form url.Values) (CallInfo, error) {
	var raw callJSON
	if err := r.do(ctx, op, method, path, form, &raw); err != nil {
		return CallInfo{}, err
	}
	info, err := raw.info()
	if err != nil {
		return CallInfo{}, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindProtocol,
			Err: fmt.Errorf("call %s: %w", raw.SID, err)}
	}
	return info, nil
}

// callJSON is the call resource's JSON; the nullable fields are pointers.
type callJSON struct {
	SID           string          `json:"sid"`
	AccountSID    string          `json:"account_sid"`
	To            string          `json:"to"`
	From          string          `json:"from"`
	Status        string          `json:"status"`
	Direction     string          `json:"direction"`
	AnsweredBy    *string         `json:"answered_by"`
	ParentCallSID *string         `json:"parent_call_sid"`
	Duration      json.RawMessage `json:"duration"` // "12", 12 or null
	DateCreated   *string         `json:"date_created"`
	StartTime     *string         `json:"start_time"`
	EndTime       *string         `json:"end_time"`
}

func (j callJSON) info() (CallInfo, error) {
	if j.SID == "" || j.Status == "" {
		return CallInfo{}, errors.New("answer has no sid or status")
	}
	info := CallInfo{
		SID: j.SID, AccountSID: j.AccountSID, To: j.To, From: j.From, Status: j.Status, Direction: j.Direction,
		AnsweredBy: deref(j.AnsweredBy), ParentCallSID: deref(j.ParentCallSID),
	}
	secs, err := seconds(j.Duration)
	if err != nil {
		return CallInfo{}, err
	}
	info.Duration = secs
	for _, t := range []struct {
		name string
		in   *string
		out  *time.Time
	}{{"date_created", j.DateCreated, &info.DateCreated}, {"start_time", j.StartTime, &info.StartTime}, {"end_time", j.EndTime, &info.EndTime}} {
		if deref(t.in) == "" {
			continue
		}
		v, err := time.Parse(time.RFC1123Z, *t.in)
		if err != nil {
			return CallInfo{}, fmt.Errorf("%s %q is not an RFC 2822 time", t.name, *t.in)
		}
		*t.out = v
	}
	return info, nil
}

// seconds reads Twilio's duration: a string of whole seconds, sometimes a number, or null.
func seconds(raw json.RawMessage) (time.Duration, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf("duration %s: %w", raw, err)
		}
	} else {
		s = string(raw)
	}
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("duration %s is not a whole number of seconds", raw)
	}
	return time.Duration(n) * time.Second, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
