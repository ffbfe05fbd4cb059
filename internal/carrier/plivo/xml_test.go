package plivo_test

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/carrier/plivo"
)

type streamDoc struct {
	XMLName xml.Name `xml:"Response"`
	Stream  struct {
		Attrs []xml.Attr `xml:",any,attr"`
		Text  string     `xml:",chardata"`
	} `xml:"Stream"`
}

func attrs(d streamDoc) map[string]string {
	out := map[string]string{}
	for _, a := range d.Stream.Attrs {
		out[a.Name.Local] = a.Value
	}
	return out
}

// TestStreamURLIsElementText / keepCallAlive / contentType: what Plivo needs to stream
// both ways and keep the call, and to send μ-law rather than its L16 default.
func TestStreamXML(t *testing.T) {
	u := "wss://handset.example.com/plivo/stream?a=1&b=<2>"
	doc, err := plivo.StreamXML(plivo.Stream{URL: u, StatusURL: "https://handset.example.com/plivo/stream-status?x=1&y=2", Token: "Tok3n"})
	if err != nil {
		t.Fatal(err)
	}
	var d streamDoc
	if err := xml.Unmarshal(doc, &d); err != nil {
		t.Fatalf("not XML: %v\n%s", err, doc)
	}
	if d.Stream.Text != u {
		t.Errorf("stream URL text %q, want %q", d.Stream.Text, u)
	}
	want := map[string]string{
		"bidirectional": "true", "keepCallAlive": "true", "audioTrack": "inbound",
		"contentType": plivo.ContentMulaw8k, "streamTimeout": "86400",
		"statusCallbackUrl": "https://handset.example.com/plivo/stream-status?x=1&y=2", "statusCallbackMethod": "POST",
		"extraHeaders": "handsettoken=Tok3n",
	}
	got := attrs(d)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["url"]; ok || len(got) != len(want) {
		t.Errorf("attributes %v, want exactly %v", got, want)
	}

	l16, err := plivo.StreamXML(plivo.Stream{URL: "wss://h.example.com/s", Token: "t", ContentType: plivo.ContentL16_16k})
	if err != nil || !strings.Contains(string(l16), `contentType="audio/x-l16;rate=16000"`) {
		t.Errorf("L16 16k: %s, %v", l16, err)
	}
}

func TestStreamXMLRefusesWhatPlivoWould(t *testing.T) {
	for name, s := range map[string]plivo.Stream{
		"http URL":           {URL: "https://h.example.com/s", Token: "t"},
		"no URL":             {Token: "t"},
		"token with a dash":  {URL: "wss://h.example.com/s", Token: "a-b"},
		"token with a comma": {URL: "wss://h.example.com/s", Token: "a,b=c"},
		"no token":           {URL: "wss://h.example.com/s"},
		"token too long":     {URL: "wss://h.example.com/s", Token: strings.Repeat("a", plivo.MaxExtraHeaders)},
		"content type":       {URL: "wss://h.example.com/s", Token: "t", ContentType: "audio/x-alaw;rate=8000"},
	} {
		if doc, err := plivo.StreamXML(s); err == nil {
			t.Errorf("%s: accepted: %s", name, doc)
		}
	}
	longest := strings.Repeat("a", plivo.MaxExtraHeaders-len(plivo.TokenHeader)-1)
	if _, err := plivo.StreamXML(plivo.Stream{URL: "wss://h.example.com/s", Token: longest}); err != nil {
		t.Errorf("a token that just fits: %v", err)
	}
}

func TestDialHoldHangupXML(t *testing.T) {
	var dial struct {
		Dial struct {
			CallerID string `xml:"callerId,attr"`
			Number   string `xml:"Number"`
		}
	}
	if err := xml.Unmarshal(plivo.DialXML("+15550103000", "+14155550100"), &dial); err != nil ||
		dial.Dial.Number != "+15550103000" || dial.Dial.CallerID != "+14155550100" {
		t.Errorf("DialXML: %+v, %v", dial, err)
	}
	if doc := string(plivo.DialXML("+15550103000", "")); strings.Contains(doc, "callerId") {
		t.Errorf("DialXML without caller id: %s", doc)
	}
	var hold struct {
		Wait struct {
			Length int `xml:"length,attr"`
		}
	}
	if err := xml.Unmarshal(plivo.HoldXML(30), &hold); err != nil || hold.Wait.Length != 30 {
		t.Errorf("HoldXML: %+v, %v", hold, err)
	}
	if !strings.Contains(string(plivo.HangupXML()), "<Response><Hangup></Hangup></Response>") {
		t.Errorf("HangupXML: %s", plivo.HangupXML())
	}
}
