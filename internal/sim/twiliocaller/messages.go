package twiliocaller

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// Twilio → Handset message shapes (Media Streams WebSocket messages). Every message but
// connected carries sequenceNumber and streamSid.
type outMsg struct {
	Event          string     `json:"event"`
	Protocol       string     `json:"protocol,omitempty"`
	Version        string     `json:"version,omitempty"`
	SequenceNumber string     `json:"sequenceNumber,omitempty"`
	StreamSid      string     `json:"streamSid,omitempty"`
	Start          *startBody `json:"start,omitempty"`
	Mark           *markBody  `json:"mark,omitempty"`
	DTMF           *dtmfBody  `json:"dtmf,omitempty"`
	Stop           *stopBody  `json:"stop,omitempty"`
}

type startBody struct {
	StreamSid        string            `json:"streamSid"`
	AccountSid       string            `json:"accountSid"`
	CallSid          string            `json:"callSid"`
	Tracks           []string          `json:"tracks"`
	CustomParameters map[string]string `json:"customParameters"`
	MediaFormat      mediaFormat       `json:"mediaFormat"`
}

type mediaFormat struct {
	Encoding   string `json:"encoding"`
	SampleRate int    `json:"sampleRate"`
	Channels   int    `json:"channels"`
}

// telephoneFormat is the only format Twilio streams: 8 kHz mono mu-law.
var telephoneFormat = mediaFormat{Encoding: "audio/x-mulaw", SampleRate: 8000, Channels: 1}

type markBody struct {
	Name string `json:"name"`
}

type dtmfBody struct {
	Track string `json:"track"`
	Digit string `json:"digit"`
}

type stopBody struct {
	AccountSid string `json:"accountSid"`
	CallSid    string `json:"callSid"`
}

func connectedMsg() []byte {
	return mustJSON(outMsg{Event: "connected", Protocol: "Call", Version: "1.0.0"})
}

func startMsg(seq int, streamSid, accountSid, callSid string, params map[string]string) []byte {
	if params == nil {
		params = map[string]string{}
	}
	return mustJSON(outMsg{
		Event: "start", SequenceNumber: strconv.Itoa(seq), StreamSid: streamSid,
		Start: &startBody{
			StreamSid: streamSid, AccountSid: accountSid, CallSid: callSid,
			Tracks: []string{"inbound"}, CustomParameters: params, MediaFormat: telephoneFormat,
		},
	})
}

func markMsg(seq int, streamSid, name string) []byte {
	return mustJSON(outMsg{Event: "mark", SequenceNumber: strconv.Itoa(seq), StreamSid: streamSid, Mark: &markBody{Name: name}})
}

func dtmfMsg(seq int, streamSid, digit string) []byte {
	return mustJSON(outMsg{Event: "dtmf", SequenceNumber: strconv.Itoa(seq), StreamSid: streamSid, DTMF: &dtmfBody{Track: "inbound_track", Digit: digit}})
}

func stopMsg(seq int, streamSid, accountSid, callSid string) []byte {
	return mustJSON(outMsg{Event: "stop", SequenceNumber: strconv.Itoa(seq), StreamSid: streamSid, Stop: &stopBody{AccountSid: accountSid, CallSid: callSid}})
}

// appendMediaMsg appends one inbound media message to dst without allocating beyond dst's
// growth; it runs for every 20 ms frame. streamSid is a sid, so it needs no JSON escaping.
func appendMediaMsg(dst []byte, seq, chunk int, timestampMs int64, streamSid string, payload []byte) []byte {
	dst = append(dst, `{"event":"media","sequenceNumber":"`...)
	dst = strconv.AppendInt(dst, int64(seq), 10)
	dst = append(dst, `","streamSid":"`...)
	dst = append(dst, streamSid...)
	dst = append(dst, `","media":{"track":"inbound","chunk":"`...)
	dst = strconv.AppendInt(dst, int64(chunk), 10)
	dst = append(dst, `","timestamp":"`...)
	dst = strconv.AppendInt(dst, timestampMs, 10)
	dst = append(dst, `","payload":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, payload)
	return append(dst, `"}}`...)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("twiliocaller: marshal: " + err.Error()) // only fixed struct shapes reach here
	}
	return b
}

// Handset → Twilio message shape: media, mark or clear.
type inMsg struct {
	Event     string `json:"event"`
	StreamSid string `json:"streamSid"`
	Media     *struct {
		Payload *string `json:"payload"`
	} `json:"media"`
	Mark *struct {
		Name *string `json:"name"`
	} `json:"mark"`
}
