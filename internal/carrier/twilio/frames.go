package twilio

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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
	err := eachMember(msg, func(key, val []byte) {
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
	if err := eachMember(media, func(key, val []byte) {
		if string(key) == "payload" {
			payload = val
		}
	}); err != nil {
		return nil, err
	}
	if len(payload) < 2 || payload[0] != '"' || bytes.IndexByte(payload, '\\') >= 0 {
		return nil, errors.New("media message without a plain payload string")
	}
	payload = payload[1 : len(payload)-1]
	if base64.StdEncoding.DecodedLen(len(payload)) > cap(dst) {
		return nil, fmt.Errorf("media payload of %d bytes is too large", len(payload))
	}
	n, err := base64.StdEncoding.Decode(dst[:cap(dst)], payload)
	if err != nil {
		return nil, fmt.Errorf("media payload: %w", err)
	}
	return dst[:n], nil
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
	dst = appendString(dst, streamSid)
	dst = append(dst, `,"media":{"payload":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, audio)
	return append(dst, `"}}`...)
}

func appendMark(dst []byte, streamSid, name string) []byte {
	dst = append(dst, `{"event":"mark","streamSid":`...)
	dst = appendString(dst, streamSid)
	dst = append(dst, `,"mark":{"name":`...)
	dst = appendString(dst, name)
	return append(dst, `}}`...)
}

func appendClear(dst []byte, streamSid string) []byte {
	dst = append(dst, `{"event":"clear","streamSid":`...)
	dst = appendString(dst, streamSid)
	return append(dst, '}')
}

// appendString appends s as a JSON string. Ids and mark names are ASCII we chose, but
// anything else is escaped correctly too.
func appendString(dst []byte, s string) []byte {
	safe := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			safe = false
			break
		}
	}
	if safe {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s)
	return append(dst, b...)
}

// eachMember calls fn with the raw key (unquoted, escapes left as they are) and the raw
// value of every member of the JSON object in data, without allocating.
func eachMember(data []byte, fn func(key, val []byte)) error {
	end, err := scanObject(data, skipSpace(data, 0), fn, 0)
	if err != nil {
		return err
	}
	if skipSpace(data, end) != len(data) {
		return errors.New("malformed message: data after the object")
	}
	return nil
}

// scanObject reads the object starting at d[i], calling fn (when not nil) with each
// member's raw key and value, and returns the index just past it. Every value is checked
// as encoding/json would check it, in the same single pass.
func scanObject(d []byte, i int, fn func(key, val []byte), depth int) (int, error) {
	if depth > maxDepth {
		return 0, errTooDeep
	}
	if i >= len(d) || d[i] != '{' {
		return 0, errors.New("malformed message: not a JSON object")
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return 0, errors.New("malformed message: expected a key")
		}
		end, err := skipString(d, i)
		if err != nil {
			return 0, err
		}
		key := d[i+1 : end-1]
		i = skipSpace(d, end)
		if i >= len(d) || d[i] != ':' {
			return 0, errors.New("malformed message: expected ':'")
		}
		i = skipSpace(d, i+1)
		vend, err := skipValue(d, i, depth+1)
		if err != nil {
			return 0, err
		}
		if fn != nil {
			fn(key, d[i:vend])
		}
		i = skipSpace(d, vend)
		if i >= len(d) {
			return 0, errors.New("malformed message: unterminated object")
		}
		if d[i] == '}' {
			return i + 1, nil
		}
		if d[i] != ',' {
			return 0, errors.New("malformed message: expected ',' or '}'")
		}
		i = skipSpace(d, i+1)
	}
}

// scanArray returns the index just past the array starting at d[i] == '['.
func scanArray(d []byte, i int, depth int) (int, error) {
	if depth > maxDepth {
		return 0, errTooDeep
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := skipValue(d, i, depth+1)
		if err != nil {
			return 0, err
		}
		i = skipSpace(d, end)
		if i >= len(d) {
			return 0, errors.New("malformed message: unterminated array")
		}
		if d[i] == ']' {
			return i + 1, nil
		}
		if d[i] != ',' {
			return 0, errors.New("malformed message: expected ',' or ']'")
		}
		i = skipSpace(d, i+1)
	}
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at d[i] == '"', refusing
// what encoding/json refuses: raw control characters and unknown escapes.
func skipString(d []byte, i int) (int, error) {
	for j := i + 1; j < len(d); j++ {
		switch c := d[j]; {
		case c == '"':
			return j + 1, nil
		case c < 0x20:
			return 0, errors.New("malformed message: control character in a string")
		case c == '\\':
			j++
			if j >= len(d) {
				break
			}
			switch d[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(d) || !isHex(d[j+1]) || !isHex(d[j+2]) || !isHex(d[j+3]) || !isHex(d[j+4]) {
					return 0, errors.New("malformed message: bad \\u escape")
				}
				j += 4
			default:
				return 0, errors.New("malformed message: bad escape")
			}
		}
	}
	return 0, errors.New("malformed message: unterminated string")
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// maxDepth bounds nesting on the fast path: Twilio's messages are three levels deep, and a
// message built to recurse deeply goes to encoding/json instead, which has its own bound.
const maxDepth = 32

var errTooDeep = errors.New("malformed message: nested too deeply for the fast path")

// skipValue returns the index just past the JSON value starting at d[i] at nesting depth,
// refusing what encoding/json refuses.
func skipValue(d []byte, i, depth int) (int, error) {
	if i >= len(d) {
		return 0, errors.New("malformed message: missing value")
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{':
		return scanObject(d, i, nil, depth)
	case '[':
		return scanArray(d, i, depth)
	}
	j := i
	for j < len(d) && d[j] != ',' && d[j] != '}' && d[j] != ']' && d[j] != ' ' && d[j] != '\n' && d[j] != '\r' && d[j] != '\t' {
		j++
	}
	if j == i || !json.Valid(d[i:j]) { // a number, true, false or null, and nothing else
		return 0, errors.New("malformed message: bad value")
	}
	return j, nil
}
