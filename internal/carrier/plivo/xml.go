package plivo

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// Plivo's XML (https://www.plivo.com/docs/voice/xml/): what Handset answers Plivo's
// requests for a call's instructions with.

// Stream content types Plivo accepts for a bidirectional stream. Its default is L16 at
// 8 kHz, so Handset always names one.
const (
	ContentMulaw8k = "audio/x-mulaw;rate=8000"
	ContentL16_8k  = "audio/x-l16;rate=8000"
	ContentL16_16k = "audio/x-l16;rate=16000"
)

// StreamTimeout is the longest a stream may run, in seconds: a day, so only the call's
// own limit ends it.
const StreamTimeout = 86400

// MaxExtraHeaders is the most Plivo takes in a Stream's extraHeaders.
const MaxExtraHeaders = 512

// TokenHeader is the name of the extra header carrying Handset's one-time stream token,
// which Plivo hands back in the stream's start frame.
const TokenHeader = "handsettoken"

// Stream is the bidirectional media stream an answer document opens.
type Stream struct {
	// URL is the wss:// URL Plivo connects the stream to.
	URL string
	// StatusURL, when set, is where Plivo POSTs the stream's events (StartStream,
	// StopStream, DroppedStream).
	StatusURL string
	// ContentType is one of the Content… values; empty is ContentMulaw8k.
	ContentType string
	// Token is the stream token, alphanumerics only, sent as extra header TokenHeader.
	Token string
}

// StreamXML is the answer document that connects the call's audio to s: bidirectional,
// inbound track only (what bidirectional requires), the call kept alive while the stream
// runs (without it Plivo falls through the document and hangs up), the URL as the
// element's text.
func StreamXML(s Stream) ([]byte, error) {
	ct, extra, err := s.check()
	if err != nil {
		return nil, err
	}
	type stream struct {
		Bidirectional bool   `xml:"bidirectional,attr"`
		KeepCallAlive bool   `xml:"keepCallAlive,attr"`
		AudioTrack    string `xml:"audioTrack,attr"`
		ContentType   string `xml:"contentType,attr"`
		StreamTimeout int    `xml:"streamTimeout,attr"`
		StatusURL     string `xml:"statusCallbackUrl,attr,omitempty"`
		StatusMethod  string `xml:"statusCallbackMethod,attr,omitempty"`
		ExtraHeaders  string `xml:"extraHeaders,attr"`
		URL           string `xml:",chardata"`
	}
	st := stream{Bidirectional: true, KeepCallAlive: true, AudioTrack: "inbound", ContentType: ct,
		StreamTimeout: StreamTimeout, ExtraHeaders: extra, URL: s.URL}
	if s.StatusURL != "" {
		st.StatusURL, st.StatusMethod = s.StatusURL, "POST"
	}
	return document(struct {
		XMLName xml.Name `xml:"Response"`
		Stream  stream   `xml:"Stream"`
	}{Stream: st}), nil
}

// form is s as the REST stream request's fields.
func (s Stream) form() (url.Values, error) {
	ct, extra, err := s.check()
	if err != nil {
		return nil, err
	}
	f := url.Values{"service_url": {s.URL}, "bidirectional": {"true"}, "audio_track": {"inbound"},
		"content_type": {ct}, "stream_timeout": {strconv.Itoa(StreamTimeout)}, "extra_headers": {extra}}
	if s.StatusURL != "" {
		f.Set("status_callback_url", s.StatusURL)
		f.Set("status_callback_method", "POST")
	}
	return f, nil
}

// check refuses what Plivo would, and gives the content type and extra headers to send.
func (s Stream) check() (contentType, extraHeaders string, err error) {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "wss" && u.Scheme != "ws") || u.Host == "" {
		return "", "", fmt.Errorf("stream URL %q is not a ws(s):// URL", s.URL)
	}
	contentType = s.ContentType
	switch contentType {
	case "":
		contentType = ContentMulaw8k
	case ContentMulaw8k, ContentL16_8k, ContentL16_16k:
	default:
		return "", "", fmt.Errorf("stream content type %q is not one Plivo streams", contentType)
	}
	if s.Token == "" || !alphanumeric(s.Token) {
		return "", "", errors.New("the stream token must be alphanumerics only, as Plivo's extraHeaders require")
	}
	extraHeaders = TokenHeader + "=" + s.Token
	if len(extraHeaders) > MaxExtraHeaders {
		return "", "", fmt.Errorf("the stream token makes extraHeaders %d bytes, more than Plivo's %d", len(extraHeaders), MaxExtraHeaders)
	}
	return contentType, extraHeaders, nil
}

// HoldXML keeps an answered call silent for up to seconds while Handset waits for a
// machine-detection verdict; the verdict's callback then starts the stream or hangs up.
func HoldXML(seconds int) []byte {
	type wait struct {
		Length int `xml:"length,attr"`
	}
	return document(struct {
		XMLName xml.Name `xml:"Response"`
		Wait    wait     `xml:"Wait"`
	}{Wait: wait{Length: max(seconds, 1)}})
}

// DialXML connects the call to the phone number to (E.164), showing callerID when set.
func DialXML(to, callerID string) []byte {
	type number struct {
		Value string `xml:",chardata"`
	}
	type dial struct {
		CallerID string `xml:"callerId,attr,omitempty"`
		Number   number `xml:"Number"`
	}
	return document(struct {
		XMLName xml.Name `xml:"Response"`
		Dial    dial     `xml:"Dial"`
	}{Dial: dial{CallerID: callerID, Number: number{Value: to}}})
}

// HangupXML ends the call.
func HangupXML() []byte {
	return document(struct {
		XMLName xml.Name `xml:"Response"`
		Hangup  struct{} `xml:"Hangup"`
	}{})
}

func document(v any) []byte {
	out, err := xml.Marshal(v)
	if err != nil { // the shapes above always marshal
		panic(err)
	}
	return append([]byte(xml.Header), out...)
}

func alphanumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
