package telnyx

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/handset-voice/handset/internal/carrier/mediastream"
)

// Media streaming messages, as Telnyx documents them: JSON text frames in snake_case whose
// numbers (sequence_number, chunk, timestamp) come as strings, though a number is read too.

// inbound is any message Telnyx sends us, read on the slow path.
type inbound struct {
	Event          string     `json:"event"`
	SequenceNumber flexNumber `json:"sequence_number"`
	StreamID       string     `json:"stream_id"`
	Start          struct {
		UserID        string `json:"user_id"`
		CallControlID string `json:"call_control_id"`
		ClientState   string `json:"client_state"`
		From          string `json:"from"`
		To            string `json:"to"`
		MediaFormat   struct {
			Encoding   string     `json:"encoding"`
			SampleRate flexNumber `json:"sample_rate"`
			Channels   flexNumber `json:"channels"`
		} `json:"media_format"`
	} `json:"start"`
	Media struct {
		Track   string     `json:"track"`
		Chunk   flexNumber `json:"chunk"`
		Payload string     `json:"payload"`
	} `json:"media"`
	Mark struct {
		Name string `json:"name"`
	} `json:"mark"`
	DTMF struct {
		Digit string `json:"digit"`
	} `json:"dtmf"`
	Stop struct {
		CallControlID string `json:"call_control_id"`
	} `json:"stop"`
	// Payload is an `error` message's description.
	Payload struct {
		Code   flexNumber `json:"code"`
		Title  string     `json:"title"`
		Detail string     `json:"detail"`
	} `json:"payload"`
}

// flexNumber reads a non-negative integer written as a JSON number or a string of digits
// (mediastream.Uint, as the fast path reads it); null or absent is 0.
type flexNumber uint64

func (n *flexNumber) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, ok := mediastream.Uint(b)
	if !ok {
		return fmt.Errorf("not a number: %.20s", b)
	}
	*n = flexNumber(v)
	return nil
}

var errNotMedia = errors.New("not a media message")

// maxMediaPayload bounds one media message's audio (Telnyx allows up to 30 s per
// message; 16 kHz L16 for 30 s is 960,000 bytes).
const maxMediaPayload = 1 << 20

// media is one decoded media frame.
type media struct {
	audio []byte // in Handset's byte order; valid until the next decode into the same buffer
	seq   uint64 // sequence_number, counted over every message; 0 when absent
	chunk uint64 // media.chunk, counted over media messages only; 0 when absent
}

// order is the number that puts media frames in order: the chunk, which counts media
// only, else the sequence number (which other events interleave, leaving gaps).
func (m media) order() uint64 {
	if m.chunk > 0 {
		return m.chunk
	}
	return m.seq
}

// decodeMedia is the per-frame fast path: it finds a `media` message's payload and
// sequence number and base64-decodes the payload into dst without allocating (dst grows
// only for a payload larger than any before). swap16 byte-swaps 16-bit samples: L16 comes
// in network byte order. Anything but media returns errNotMedia.
func decodeMedia(dst []byte, msg []byte, swap16 bool) (media, []byte, error) {
	var event, seq, body []byte
	escaped := false
	err := mediastream.Members(msg, func(key, val []byte) {
		switch {
		case bytes.IndexByte(key, '\\') >= 0:
			escaped = true
		case keyIs(key, "event"):
			event = val
		case keyIs(key, "sequence_number"):
			seq = val
		case keyIs(key, "media"):
			body = val
		}
	})
	if err != nil {
		return media{}, dst, err
	}
	if escaped {
		return media{}, dst, errNotMedia // a key spelled with escapes: the slow path reads it
	}
	if !bytes.Equal(event, []byte(`"media"`)) {
		return media{}, dst, errNotMedia
	}
	var m media
	if seq != nil && string(seq) != "null" {
		v, ok := mediastream.Uint(seq)
		if !ok {
			return media{}, dst, errors.New("media message with a bad sequence_number")
		}
		m.seq = v
	}
	if len(body) == 0 || body[0] != '{' {
		return media{}, dst, errors.New("media message without a media object")
	}
	var payload, track, chunk []byte
	if err := mediastream.Members(body, func(key, val []byte) {
		switch {
		case bytes.IndexByte(key, '\\') >= 0:
			escaped = true
		case keyIs(key, "payload"):
			payload = val
		case keyIs(key, "track"):
			track = val
		case keyIs(key, "chunk"):
			chunk = val
		}
	}); err != nil {
		return media{}, dst, err
	}
	if escaped {
		return media{}, dst, errors.New("media message with an escaped key")
	}
	if chunk != nil && string(chunk) != "null" {
		v, ok := mediastream.Uint(chunk)
		if !ok {
			return media{}, dst, errors.New("media message with a bad chunk")
		}
		m.chunk = v
	}
	if track != nil && !bytes.Equal(track, []byte(`"inbound"`)) {
		return media{}, dst, fmt.Errorf("media on track %.20s: Handset asked for the inbound track only", track)
	}
	payload, ok := mediastream.PlainString(payload)
	if !ok {
		return media{}, dst, errors.New("media message without a plain payload string")
	}
	n := base64.StdEncoding.DecodedLen(len(payload))
	if n > maxMediaPayload {
		return media{}, dst, fmt.Errorf("media payload of %d bytes is too large", len(payload))
	}
	if n > cap(dst) {
		dst = make([]byte, 0, n)
	}
	m.audio, err = mediastream.DecodeBase64(dst, payload)
	if err != nil {
		return media{}, dst, fmt.Errorf("media payload: %w", err)
	}
	n = len(m.audio)
	if swap16 {
		if n%2 != 0 {
			return media{}, dst, fmt.Errorf("L16 payload of %d bytes is not whole samples", n)
		}
		swapBytes(m.audio)
	}
	return m, dst, nil
}

// keyIs matches a member's key as encoding/json does (case-insensitively), so the fast
// path and the slow path read a message the same way.
func keyIs(key []byte, name string) bool {
	return string(key) == name || bytes.EqualFold(key, []byte(name))
}

// swapBytes turns 16-bit samples from one byte order into the other, in place. L16 over
// RTP is big-endian (network byte order); Handset's PCM16 is little-endian.
func swapBytes(b []byte) {
	for i := 0; i+1 < len(b); i += 2 {
		b[i], b[i+1] = b[i+1], b[i]
	}
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

// appendMedia appends an outbound media message to dst without allocating: audio in the
// stream's codec, L16 already in network byte order. Telnyx needs no stream id.
func appendMedia(dst, audio []byte) []byte {
	dst = append(dst, `{"event":"media","media":{"payload":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, audio)
	return append(dst, `"}}`...)
}

func appendMark(dst []byte, name string) []byte {
	dst = append(dst, `{"event":"mark","mark":{"name":`...)
	dst = mediastream.AppendString(dst, name)
	return append(dst, `}}`...)
}

func appendClear(dst []byte) []byte {
	return append(dst, `{"event":"clear"}`...)
}

// wireAudio is audio as the stream carries it: the same bytes, except L16, whose samples
// are swapped into network byte order in scratch's storage (grown only when too small).
func wireAudio(scratch, audio []byte, codec Codec) []byte {
	if codec != CodecL16 {
		return audio
	}
	scratch = append(scratch[:0], audio...)
	swapBytes(scratch)
	return scratch
}
