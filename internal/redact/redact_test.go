package redact

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

func hash(n string) string { return map[string]string{"+15550104000": "ch_bob"}[n] }

func TestJobReplacesTheDialledNumber(t *testing.T) {
	j := store.Job{Kind: "outbound_call", Payload: []byte(`{"to":"+15550104000","first_message":"hi"}`),
		Error: "the carrier says +15550104000 (15550104000) is unreachable"}
	payload, errMsg := Job(j, hash)
	var fields map[string]string
	if err := json.Unmarshal(payload, &fields); err != nil {
		t.Fatal(err)
	}
	if fields["to"] != "" || fields["caller_hash"] != "ch_bob" || fields["first_message"] != "hi" {
		t.Errorf("payload %s", payload)
	}
	if strings.Contains(errMsg, "5550104000") || errMsg != "the carrier says caller ch_bob (caller ch_bob) is unreachable" {
		t.Errorf("error %q", errMsg)
	}
	// A number with no caller hash (withheld, or no hasher) is "the number".
	if _, errMsg := Job(store.Job{Kind: "outbound_call", Payload: []byte(`{"to":"+15550109999"}`), Error: "+15550109999 busy"}, hash); errMsg != "the number busy" {
		t.Errorf("error %q", errMsg)
	}
	if payload, _ := Job(store.Job{Kind: "outbound_call", Payload: []byte(`not json +15550104000`)}, hash); payload != nil {
		t.Errorf("an unreadable payload is kept: %s", payload)
	}
	transfer := store.Job{Kind: "transfer", Payload: []byte(`{"to":"sip:desk@example.com"}`), Error: "busy"}
	if payload, errMsg := Job(transfer, hash); string(payload) != string(transfer.Payload) || errMsg != "busy" {
		t.Errorf("a transfer changed: %s %q", payload, errMsg)
	}
}

func TestPerson(t *testing.T) {
	in := store.Call{Direction: voice.Inbound, From: "+1555", To: "+1999"}
	out := store.Call{Direction: voice.Outbound, From: "+1999", To: "+1555"}
	if Person(in) != "+1555" || Person(out) != "+1555" {
		t.Errorf("person: %q %q", Person(in), Person(out))
	}
}
