package twiliocaller

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/phone"
)

// wire is Twilio's Media Streams protocol as the caller speaks it (phone.Wire). seq is the
// sequenceNumber of the last message sent: every message but connected carries the next.
type wire struct {
	streamSid, accountSid, callSid string
	params                         map[string]string
	seq                            int
}

var _ phone.Wire = (*wire)(nil)

func (w *wire) Info() phone.Info {
	return phone.Info{
		Name: "twilio", Format: audio.Telephone, Frame: audio.FrameDuration,
		MalformedCode: CodeMalformed, OverflowCode: CodeOverflow,
	}
}

func (w *wire) next() int { w.seq++; return w.seq }

func (w *wire) Handshake() [][]byte {
	return [][]byte{connectedMsg(), startMsg(w.next(), w.streamSid, w.accountSid, w.callSid, w.params)}
}

func (w *wire) AppendMedia(dst, payload []byte, f phone.Frame) []byte {
	return appendMediaMsg(dst, w.next(), f.Chunk, int64(f.At/1e6), w.streamSid, payload)
}

// Mark reports every mark, played or cleared: Twilio returns both alike.
func (w *wire) Mark(name string, _ bool) []byte { return markMsg(w.next(), w.streamSid, name) }

// Cleared is nil: Twilio sends nothing of its own after a clear.
func (w *wire) Cleared() []byte { return nil }

func (w *wire) DTMF(digit string) []byte { return dtmfMsg(w.next(), w.streamSid, digit) }

func (w *wire) Stop() []byte { return stopMsg(w.next(), w.streamSid, w.accountSid, w.callSid) }

// Decode reads media on the fast path and everything else with encoding/json.
func (w *wire) Decode(typ websocket.MessageType, data, scratch []byte) (phone.Inbound, error) {
	if typ != websocket.MessageText {
		return phone.Inbound{}, &phone.WireError{Code: CodeMalformed, Detail: "binary frame"}
	}
	if mulaw, grown, ok := fastMedia(data, w.streamSid, scratch); ok {
		return phone.Inbound{Kind: phone.InMedia, Audio: mulaw, Scratch: grown}, nil
	}
	var m inMsg
	if err := json.Unmarshal(data, &m); err != nil {
		return phone.Inbound{}, &phone.WireError{Code: CodeMalformed, Detail: "not JSON: " + err.Error()}
	}
	switch m.Event {
	case "media", "mark", "clear":
	case "":
		return phone.Inbound{}, &phone.WireError{Code: CodeMalformed, Detail: "no event"}
	default:
		return phone.Inbound{}, &phone.WireError{Code: CodeProtocol, Detail: fmt.Sprintf("unknown event %q", m.Event)}
	}
	if m.StreamSid != w.streamSid {
		return phone.Inbound{}, &phone.WireError{Code: CodeProtocol, Detail: fmt.Sprintf("%s for streamSid %q, want %q", m.Event, m.StreamSid, w.streamSid)}
	}
	switch m.Event {
	case "media":
		if m.Media == nil || m.Media.Payload == nil {
			return phone.Inbound{}, &phone.WireError{Code: CodeMalformed, Detail: "media without media.payload"}
		}
		pcm, err := base64.StdEncoding.DecodeString(*m.Media.Payload)
		if err != nil {
			return phone.Inbound{}, &phone.WireError{Code: CodeMalformed, Detail: "media payload is not base64: " + err.Error()}
		}
		return phone.Inbound{Kind: phone.InMedia, Audio: pcm}, nil
	case "mark":
		if m.Mark == nil || m.Mark.Name == nil || *m.Mark.Name == "" {
			return phone.Inbound{}, &phone.WireError{Code: CodeMalformed, Detail: "mark without mark.name"}
		}
		return phone.Inbound{Kind: phone.InMark, Name: *m.Mark.Name}, nil
	}
	return phone.Inbound{Kind: phone.InClear}, nil
}

// The media message exactly as Handset writes it, around the streamSid and the payload.
const (
	mediaHead = `{"event":"media","streamSid":"`
	mediaMid  = `","media":{"payload":"`
	mediaTail = `"}}`
)

// fastMedia is the per-frame fast path of Decode. It takes only a message that is exactly
// {"event":"media","streamSid":"<this stream>","media":{"payload":"<base64>"}} with a
// payload that decodes, and returns the audio without encoding/json, decoded into scratch
// (grown when short). Anything else (other spacing or order, escapes, a bad payload)
// reports false and goes the general way, so the two paths cannot disagree.
func fastMedia(msg []byte, streamSid string, scratch []byte) (mulaw, grown []byte, ok bool) {
	rest, ok := cutPrefix(msg, mediaHead)
	if ok {
		rest, ok = cutPrefix(rest, streamSid)
	}
	if ok {
		rest, ok = cutPrefix(rest, mediaMid)
	}
	if !ok || len(rest) < len(mediaTail) || string(rest[len(rest)-len(mediaTail):]) != mediaTail {
		return nil, nil, false
	}
	payload := rest[:len(rest)-len(mediaTail)]
	for _, b := range payload {
		if !isBase64Char(b) {
			return nil, nil, false
		}
	}
	n := base64.StdEncoding.DecodedLen(len(payload))
	if cap(scratch) < n {
		scratch = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(scratch[:n], payload)
	if err != nil {
		return nil, nil, false
	}
	return scratch[:n], scratch, true
}

// cutPrefix is bytes.CutPrefix for a string prefix, without converting it.
func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return nil, false
	}
	return b[len(prefix):], true
}

// isBase64Char reports whether b is in the standard base64 alphabet or is padding.
func isBase64Char(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '+' || b == '/' || b == '='
}
