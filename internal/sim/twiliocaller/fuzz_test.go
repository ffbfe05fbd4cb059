package twiliocaller

import (
	"testing"

	"github.com/coder/websocket"
)

func FuzzParseTwiML(f *testing.F) {
	for _, seed := range []string{
		`<Response><Connect><Stream url="wss://h.example/twilio/stream"><Parameter name="token" value="t"/></Stream></Connect></Response>`,
		`<?xml version="1.0"?><Response><Say>hi</Say><Connect><Stream url="wss://x/s"/></Connect><Pause length="1"/></Response>`,
		`<Response><Start><Stream url="wss://x/s"/></Start></Response>`,
		`<Response><Connect><Stream><Parameter/></Stream></Connect></Response>`,
		`<Response>`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tw, err := ParseTwiML(body)
		if err == nil && (tw.URL == "" || tw.Parameters == nil) {
			t.Fatalf("accepted TwiML without a stream url: %+v", tw)
		}
	})
}

// FuzzHandleMessage feeds arbitrary frames to the caller's reader logic: none may panic,
// and each must leave a trace in the recording (the event it carried, or a protocol error).
func FuzzHandleMessage(f *testing.F) {
	const sid = "MZ0123456789abcdef0123456789abcdef"
	for _, seed := range []string{
		`{"event":"media","streamSid":"` + sid + `","media":{"payload":"//////////8="}}`,
		`{"event":"mark","streamSid":"` + sid + `","mark":{"name":"m1"}}`,
		`{"event":"clear","streamSid":"` + sid + `"}`,
		`{"event":"media","streamSid":"MZother","media":{"payload":""}}`,
		`{"event":"media","streamSid":"` + sid + `","media":{"payload":"%%%"}}`,
		`{"event":"mark","streamSid":"` + sid + `","mark":{"name":null}}`,
		`{"event":"start"}`,
		`{"event":`,
		`[]`,
		`null`,
	} {
		f.Add([]byte(seed), true)
	}
	f.Add([]byte{0xff, 0x00}, false)
	f.Fuzz(func(t *testing.T, data []byte, text bool) {
		clk := newFakeClock()
		c := detached(t, Options{Clock: clk}, sid)
		typ := websocket.MessageBinary
		if text {
			typ = websocket.MessageText
		}
		c.Feed(typ, data)
		c.Feed(typ, data)
		if n := len(c.Events()); n < 2 {
			t.Fatalf("two messages left %d events", n)
		}
		c.Feed(websocket.MessageText, []byte(`{"event":"clear","streamSid":"`+sid+`"}`))
		if s := c.Snapshot(); len(s.Marks()) != s.Count(MarkEchoed) {
			t.Fatalf("marks pending after clear: %v", s.Marks())
		}
	})
}
