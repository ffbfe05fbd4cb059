package plivo_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/plivo"
)

const (
	requestID = "5d6e0c57-0000-4000-8000-00000000000a"
	callUUID  = "9a1c2b3d-0000-4000-8000-00000000000b"
)

// TestCallbackRecord: the request id names the call once the CallUUID arrived; the
// verdict and the end are kept; a callback naming no call is refused.
func TestCallbackRecord(t *testing.T) {
	ctx := ctxOf(t)
	m := carriertest.NewMemory()
	now := time.Now()
	query := url.Values{plivo.CallParam: {"call-1"}}
	for _, form := range []url.Values{
		{"RequestUUID": {requestID}, "CallUUID": {callUUID}, "CallStatus": {"ringing"}},
		{"RequestUUID": {requestID}, "CallUUID": {callUUID}, "CallStatus": {"in-progress"}, "Machine": {"false"}},
		{"RequestUUID": {requestID}, "CallUUID": {callUUID}, "CallStatus": {"completed"}, "BillDuration": {"7"}},
		{"RequestUUID": {requestID}, "CallUUID": {callUUID}, "CallStatus": {"in-progress"}}, // late
	} {
		if err := plivo.ReadCallback(query, form).Record(ctx, m, now); err != nil {
			t.Fatal(err)
		}
	}
	for _, ref := range []string{requestID, callUUID} {
		p, ok, err := m.Progress(ctx, ref)
		want := carrier.Progress{CallID: "call-1", Ref: callUUID, Status: carrier.StatusCompleted, AnsweredBy: carrier.AnsweredHuman, Duration: 7 * time.Second}
		if err != nil || !ok || p != want {
			t.Errorf("Progress(%s) = %+v, %v, %v; want %+v", ref, p, ok, err, want)
		}
	}
	if err := plivo.ReadCallback(query, url.Values{"CallStatus": {"completed"}, "CallUUID": {"../../etc"}}).Record(ctx, m, now); err == nil {
		t.Error("a callback naming no usable call was recorded")
	}
}
