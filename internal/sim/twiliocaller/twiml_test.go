package twiliocaller

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTwiMLTakesConnectStreamAndToleratesExtras(t *testing.T) {
	body := `<?xml version="1.0" encoding="UTF-8"?>
<Response>
  <Say voice="alice">One moment</Say>
  <Connect action="https://h.example/after">
    <Stream url="wss://h.example/twilio/stream" name="bot" track="inbound_track" statusCallback="https://h.example/cb" extra="x">
      <Parameter name="token" value="abc"/>
      <Parameter name="tenant" value="acme &amp; co"/>
      <Unknown/>
    </Stream>
  </Connect>
  <Pause length="40"/>
</Response>`
	got, err := ParseTwiML([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := StreamTwiML{
		URL: "wss://h.example/twilio/stream", Name: "bot", Track: "inbound_track", StatusCallback: "https://h.example/cb",
		Parameters: map[string]string{"token": "abc", "tenant": "acme & co"},
		Verbs:      []string{"Say", "Connect", "Pause"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("ParseTwiML (-want +got):\n%s", d)
	}
}

func TestParseTwiMLErrors(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"not xml":           {"hello", "parse"},
		"wrong root":        {`<Reply><Connect><Stream url="wss://x/s"/></Connect></Reply>`, "<Reply>"},
		"no stream":         {`<Response><Say>busy</Say><Hangup/></Response>`, "no <Connect><Stream>"},
		"unidirectional":    {`<Response><Start><Stream url="wss://x/s"/></Start><Pause/></Response>`, "no <Connect><Stream>"},
		"relay not stream":  {`<Response><Connect><ConversationRelay url="wss://x/s"/></Connect></Response>`, "no <Connect><Stream>"},
		"no url":            {`<Response><Connect><Stream/></Connect></Response>`, "no url"},
		"nameless param":    {`<Response><Connect><Stream url="wss://x/s"><Parameter value="v"/></Stream></Connect></Response>`, "no name"},
		"empty":             {"", "parse"},
		"truncated element": {`<Response><Connect><Stream url="wss://x/s">`, "parse"},
	} {
		_, err := ParseTwiML([]byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, tc.want)
		}
	}
}

func TestCheckStreamURL(t *testing.T) {
	for _, tc := range []struct {
		url      string
		insecure bool
		ok       bool
	}{
		{"wss://h.example/twilio/stream", false, true},
		{"ws://127.0.0.1:1234/twilio/stream", false, false},
		{"ws://127.0.0.1:1234/twilio/stream", true, true},
		{"https://h.example/twilio/stream", false, false},
		{"wss://h.example/twilio/stream?token=1", false, false},
		{"wss://h.example/twilio/stream?", false, false},
		{"wss:///twilio/stream", false, false},
		{"/twilio/stream", false, false},
	} {
		err := CheckStreamURL(tc.url, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("CheckStreamURL(%q, %t) = %v, want ok %t", tc.url, tc.insecure, err, tc.ok)
		}
	}
}

func TestDefaultDialURLRewritesPublicOntoBase(t *testing.T) {
	for _, tc := range []struct{ base, public, stream, want string }{
		{"http://127.0.0.1:8080", "https://h.example", "wss://h.example/twilio/stream", "ws://127.0.0.1:8080/twilio/stream"},
		{"https://lb.internal", "https://h.example/voice", "wss://h.example/voice/twilio/stream", "wss://lb.internal/twilio/stream"},
		{"http://127.0.0.1:8080/pre", "https://h.example", "wss://h.example/twilio/stream", "ws://127.0.0.1:8080/pre/twilio/stream"},
		{"http://127.0.0.1:8080", "https://h.example", "wss://elsewhere.example/s", "wss://elsewhere.example/s"},
	} {
		o := Options{BaseURL: tc.base, PublicURL: tc.public}.withDefaults()
		got, err := o.streamDialURL(tc.stream)
		if err != nil || got != tc.want {
			t.Errorf("base %s public %s: %s → %q, %v; want %q", tc.base, tc.public, tc.stream, got, err, tc.want)
		}
	}
	o := Options{BaseURL: "http://a", DialURL: func(string) string { return "ws://mapped/s" }}.withDefaults()
	if got, _ := o.streamDialURL("wss://h.example/s"); got != "ws://mapped/s" {
		t.Errorf("DialURL option ignored: %q", got)
	}
}
