package telnyx

import (
	"encoding/json"
	"testing"
	"time"
)

// TestEnvelopeReadsARealEvent decodes a call.initiated shaped as Telnyx sends it, with
// the fields Handset ignores.
func TestEnvelopeReadsARealEvent(t *testing.T) {
	body := `{"data":{"record_type":"event","event_type":"call.initiated","id":"0ccc7b54-4df3-4bca-a65a-3da1ecc777f0",
"occurred_at":"2026-11-29T02:00:00.000000Z","payload":{"call_control_id":"v3:abc","call_leg_id":"leg1",
"call_session_id":"sess1","caller_id_name":"+15550001111","calling_party_type":"pstn","client_state":null,
"connection_codecs":"G722,PCMU,PCMA","connection_id":"1494404757140276705","direction":"incoming",
"from":"+15550001111","from_sip_uri":"+15550001111@10.0.0.1","offered_codecs":"PCMU,G729",
"start_time":"2026-11-29T02:00:00.000000Z","state":"parked","to":"+15550002222","to_sip_uri":"+15550002222@10.0.0.2"}},
"meta":{"attempt":2,"delivered_to":"https://example.test/telnyx/webhook"}}`
	var env Envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatal(err)
	}
	var p CallPayload
	if err := json.Unmarshal(env.Data.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if env.Data.EventType != EventCallInitiated || env.Data.ID == "" || env.Meta.Attempt != 2 {
		t.Errorf("envelope = %+v", env)
	}
	if p.CallControlID != "v3:abc" || p.From != "+15550001111" || p.To != "+15550002222" || p.Direction != "incoming" || p.State != "parked" || p.ClientState != "" {
		t.Errorf("payload = %+v", p)
	}
}

func TestDuration(t *testing.T) {
	p := CallPayload{StartTime: "2026-11-29T02:00:00.5Z", EndTime: "2026-11-29T02:01:10Z"}
	if got := p.Duration(); got != 69500*time.Millisecond {
		t.Errorf("Duration = %v", got)
	}
	for _, bad := range []CallPayload{{}, {StartTime: "x", EndTime: "2026-11-29T02:01:10Z"}, {StartTime: "2026-11-29T02:01:10Z", EndTime: "2026-11-29T02:00:00Z"}} {
		if got := bad.Duration(); got != 0 {
			t.Errorf("Duration(%+v) = %v, want 0", bad, got)
		}
	}
}
