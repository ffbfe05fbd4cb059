package plivo

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// Calls through the Call resource (https://www.plivo.com/docs/voice/api/call/).

// CallRequest places one outbound call (POST Call/).
type CallRequest struct {
	// To and From are phone numbers, written loosely or in E.164 (see
	// carrier.NormalizeNumber); Plivo takes them without the "+".
	To, From string
	// AnswerURL is where Plivo asks (POST) what to do once the call is answered.
	AnswerURL string
	// HangupURL, when set, is where Plivo POSTs the call's end.
	HangupURL string
	// RingURL, when set, is where Plivo POSTs that the call is ringing: the first
	// callback, which brings the call's CallUUID.
	RingURL string
	// RingTimeout is how long the phone may ring, in whole seconds rounded up; 0 leaves
	// Plivo's default.
	RingTimeout time.Duration
	// TimeLimit caps the call's length, in whole seconds rounded up; 0 leaves Plivo's
	// default.
	TimeLimit time.Duration
	// MachineDetection, when set, is the machine_detection value (see
	// ControlOptions.MachineDetection) and MachineDetectionURL where Plivo POSTs the
	// verdict.
	MachineDetection, MachineDetectionURL string
}

// LiveCall is a call in progress (GET Call/{uuid}/?status=live).
type LiveCall struct {
	CallUUID    string `json:"call_uuid"`
	CallStatus  string `json:"call_status"` // ringing, in-progress
	From        string `json:"from"`
	To          string `json:"to"`
	Direction   string `json:"direction"`
	RequestUUID string `json:"request_uuid"`
}

// QueuedCall is a call placed but not dialled yet (GET Call/{request_uuid}/?status=queued).
type QueuedCall struct {
	CallUUID    string `json:"call_uuid"`
	CallStatus  string `json:"call_status"`
	RequestUUID string `json:"request_uuid"`
	From        string `json:"from"`
	To          string `json:"to"`
	Direction   string `json:"direction"`
}

// CallRecord is an ended call's record (GET Call/{uuid}/). Plivo writes it a moment after
// the call ends.
type CallRecord struct {
	CallUUID        string `json:"call_uuid"`
	From            string `json:"from_number"`
	To              string `json:"to_number"`
	Direction       string `json:"call_direction"`
	CallState       string `json:"call_state"`
	AnswerTime      string `json:"answer_time"`
	EndTime         string `json:"end_time"`
	HangupCauseName string `json:"hangup_cause_name"`
	HangupSource    string `json:"hangup_source"`
	// BillDuration is the answered part of the call, in seconds.
	BillDuration int `json:"bill_duration"`
}

// CreateCall places an outbound call and returns Plivo's request id (request_uuid): the
// call's own id (CallUUID) comes with its first callback. The request is checked first: a
// bad one is a KindBadInput error and nothing is sent.
func (r *REST) CreateCall(ctx context.Context, req CallRequest) (requestUUID string, err error) {
	const op = "create call"
	form, err := req.form()
	if err != nil {
		return "", &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err}
	}
	var out struct {
		RequestUUID json.RawMessage `json:"request_uuid"`
	}
	if err := r.do(ctx, op, http.MethodPost, "Call/", form, &out); err != nil {
		return "", err
	}
	// a string, or a list of one when to names one number
	var one string
	var list []string
	switch {
	case json.Unmarshal(out.RequestUUID, &one) == nil && one != "":
	case json.Unmarshal(out.RequestUUID, &list) == nil && len(list) == 1 && list[0] != "":
		one = list[0]
	default:
		return "", &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindProtocol,
			Err: fmt.Errorf("the answer has no usable request_uuid: %s", voice.Clip(string(out.RequestUUID), 80))}
	}
	if !validID(one) {
		return "", &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindProtocol,
			Err: fmt.Errorf("request_uuid %q is not an id", voice.Clip(one, 80))}
	}
	return one, nil
}

// form checks req and writes it as Plivo's make-call form.
func (req CallRequest) form() (url.Values, error) {
	to, err := carrier.NormalizeNumber(req.To)
	if err != nil {
		return nil, fmt.Errorf("to: %w", err)
	}
	from, err := carrier.NormalizeNumber(req.From)
	if err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	if err := absoluteURL("answer_url", req.AnswerURL); err != nil {
		return nil, err
	}
	form := url.Values{"to": {plain(to)}, "from": {plain(from)}, "answer_url": {req.AnswerURL}, "answer_method": {http.MethodPost}}
	if req.HangupURL != "" {
		if err := absoluteURL("hangup_url", req.HangupURL); err != nil {
			return nil, err
		}
		form.Set("hangup_url", req.HangupURL)
		form.Set("hangup_method", http.MethodPost)
	}
	if req.RingURL != "" {
		if err := absoluteURL("ring_url", req.RingURL); err != nil {
			return nil, err
		}
		form.Set("ring_url", req.RingURL)
		form.Set("ring_method", http.MethodPost)
	}
	if req.MachineDetection != "" {
		if err := absoluteURL("machine_detection_url", req.MachineDetectionURL); err != nil {
			return nil, err
		}
		form.Set("machine_detection", req.MachineDetection)
		form.Set("machine_detection_url", req.MachineDetectionURL)
		form.Set("machine_detection_method", http.MethodPost)
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"ring_timeout", req.RingTimeout}, {"time_limit", req.TimeLimit}} {
		switch {
		case d.v < 0:
			return nil, fmt.Errorf("%s %v is negative", d.field, d.v)
		case d.v > 0:
			form.Set(d.field, strconv.FormatInt(int64(math.Ceil(d.v.Seconds())), 10))
		}
	}
	return form, nil
}

// FetchLive fetches a call in progress; a KindBadInput error with Status 404 when it is
// not (any more).
func (r *REST) FetchLive(ctx context.Context, callUUID string) (LiveCall, error) {
	var c LiveCall
	err := r.fetchID(ctx, "fetch live call", "Call/", callUUID, "?status=live", &c)
	return c, err
}

// FetchQueued fetches a call placed but not dialled yet, by its request id.
func (r *REST) FetchQueued(ctx context.Context, requestUUID string) (QueuedCall, error) {
	var c QueuedCall
	err := r.fetchID(ctx, "fetch queued call", "Call/", requestUUID, "?status=queued", &c)
	return c, err
}

// FetchRecord fetches an ended call's record.
func (r *REST) FetchRecord(ctx context.Context, callUUID string) (CallRecord, error) {
	var c CallRecord
	err := r.fetchID(ctx, "fetch call record", "Call/", callUUID, "", &c)
	return c, err
}

// HangupCall ends call callUUID (DELETE Call/{uuid}/); Plivo answers 404 for a call that
// has already ended, which the caller decides about.
func (r *REST) HangupCall(ctx context.Context, callUUID string) error {
	return r.deleteID(ctx, "hang up call", "Call/", callUUID)
}

// CancelRequest cancels a call placed but not dialled yet (DELETE Request/{id}/).
func (r *REST) CancelRequest(ctx context.Context, requestUUID string) error {
	return r.deleteID(ctx, "cancel call request", "Request/", requestUUID)
}

// TransferCall makes Plivo fetch alegURL (POST) for the call's new XML (POST Call/{uuid}/
// with legs=aleg): the stream ends and the call does what that document says.
func (r *REST) TransferCall(ctx context.Context, callUUID, alegURL string) error {
	const op = "transfer call"
	if err := checkID(op, callUUID); err != nil {
		return err
	}
	if err := absoluteURL("aleg_url", alegURL); err != nil {
		return &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err}
	}
	form := url.Values{"legs": {"aleg"}, "aleg_url": {alegURL}, "aleg_method": {http.MethodPost}}
	return r.do(ctx, op, http.MethodPost, "Call/"+callUUID+"/", form, nil)
}

// StartStream opens a bidirectional stream on live call callUUID by REST (POST
// Call/{uuid}/Stream/), as the answer document's <Stream> does: the way to stream an
// outbound call once an asynchronous machine verdict said a person answered.
func (r *REST) StartStream(ctx context.Context, callUUID string, s Stream) error {
	const op = "start stream"
	if err := checkID(op, callUUID); err != nil {
		return err
	}
	form, err := s.form()
	if err != nil {
		return &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err}
	}
	return r.do(ctx, op, http.MethodPost, "Call/"+callUUID+"/Stream/", form, nil)
}

func (r *REST) fetchID(ctx context.Context, op, resource, id, query string, out any) error {
	if err := checkID(op, id); err != nil {
		return err
	}
	return r.do(ctx, op, http.MethodGet, resource+id+"/"+query, nil, out)
}

func (r *REST) deleteID(ctx context.Context, op, resource, id string) error {
	if err := checkID(op, id); err != nil {
		return err
	}
	return r.do(ctx, op, http.MethodDelete, resource+id+"/", nil, nil)
}

// maxIDLen bounds a call or request id Handset puts in a path.
const maxIDLen = 64

// validID reports whether id may go in a path: a Plivo UUID, hex digits and dashes.
func validID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

func checkID(op, id string) error {
	if validID(id) {
		return nil
	}
	return &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput,
		Err: fmt.Errorf("%q is not a Plivo call id (a UUID)", voice.Clip(id, 80))}
}

func absoluteURL(field, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q is not an absolute http(s) URL", field, voice.Clip(v, 200))
	}
	return nil
}

// plain is an E.164 number as Plivo writes it, without the "+".
func plain(e164 string) string { return strings.TrimPrefix(e164, "+") }

// e164 is a number Plivo wrote (without "+", usually) in E.164; "" when it is not one.
func e164(n string) string {
	n = strings.TrimSpace(n)
	if n == "" {
		return ""
	}
	if !strings.HasPrefix(n, "+") {
		n = "+" + n
	}
	out, err := carrier.NormalizeNumber(n)
	if err != nil {
		return ""
	}
	return out
}
