package twilio

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/handset-voice/handset/internal/carrier/mediastream"
)

// Media Streams messages, as documented at
// https://www.twilio.com/docs/voice/media-streams/websocket-messages.

// inbound is any message Twilio sends us.
type inbound struct {
	Event     string `json:"event"`
	StreamSid string `json:"streamSid"`
	Start     struct {
		StreamSid        string            `json:"streamSid"`
		AccountSid       string            `json:"accountSid"`
		CallSid          string            `json:"callSid"`
		Tracks           []string          `json:"tracks"`
		CustomParameters map[string]string `json:"customParameters"`
		MediaFormat      struct {
			Encoding   string `json:"encoding"`
			SampleRate int    `json:"sampleRate"`
			Channels   int    `json:"channels"`
		} `json:"mediaFormat"`
	} `json:"start"`
	Media struct {
		Track   string `json:"track"`
		Payload string `json:"payload"`
	} `json:"media"`
	Mark struct {
		Name string `json:"name"`
	} `json:"mark"`
	DTMF struct {
		Digit string `json:"digit"`
	} `json:"dtmf"`
}

var errNotMedia = errors.New("not a media message")

// decodeMedia is the per-frame fast path: it finds the payload of a `media` message and
// base64-decodes it into dst without allocating. Anything else returns errNotMedia and
// goes through decodeInbound.
func decodeMedia(dst, msg []byte) ([]byte, error) {
	var event, media []byte
	err := mediastream.Members(msg, func(key, val []byte) {
		switch string(key) {
		case "event":
			event = val
		case "media":
			media = val
		}
	})
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(event, []byte(`"media"`)) {
		return nil, errNotMedia
	}
	var payload []byte
	if len(media) == 0 || media[0] != '{' {
		return nil, errors.New("media message without a media object")
	}
	if err := mediastream.Members(media, func(key, val []byte) {
		if string(key) == "payload" {
			payload = val
		}
	}); err != nil {
		return nil, err
	}
	plain, ok := mediastream.PlainString(payload)
	if !ok {
		return nil, errors.New("media message without a plain payload string")
	}
	return mediastream.DecodeBase64(dst, plain)
}

// decodeInbound parses any message (the slow path for the rare non-media events).
func decodeInbound(msg []byte) (inbound, error) {
	var in inbound
	if err := json.Unmarshal(msg, &in); err != nil {
		return in, fmt.Errorf("malformed message: %w", err)
	}
	if in.Event == "" {
		return in, errors.New("message without an event")
	}
	return in, nil
}

// appendMedia appends an outbound media message to dst without allocating.
func appendMedia(dst []byte, streamSid string, audio []byte) []byte {
	dst = append(dst, `{"event":"media","streamSid":`...)
	dst = mediastream.AppendString(dst, streamSid)
	dst = append(dst, `,"media":{"payload":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, audio)
	return append(dst, `"}}`...)
}

func appendMark(dst []byte, streamSid, name string) []byte {
	dst = append(dst, `{"event":"mark","streamSid":`...)
	dst = mediastream.AppendString(dst, streamSid)
	dst = append(dst, `,"mark":{"name":`...)
	dst = mediastream.AppendString(dst, name)
	return append(dst, `}}`...)
}

func appendClear(dst []byte, streamSid string) []byte {
	dst = append(dst, `{"event":"clear","streamSid":`...)
	dst = mediastream.AppendString(dst, streamSid)
	return append(dst, '}')
}
