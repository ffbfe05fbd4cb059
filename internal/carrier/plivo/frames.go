package plivo

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/handset-voice/handset/internal/carrier/mediastream"
)

// Plivo's audio stream messages (https://www.plivo.com/docs/voice/xml/the-stream-element/):
// camelCase, numbers as JSON numbers, start first (there is no connected message), and no
// stop documented: the socket's close is the end.

// Events Plivo sends on the stream.
const (
	EventStart        = "start"
	EventMedia        = "media"
	EventDTMF         = "dtmf"
	EventPlayedStream = "playedStream" // a checkpoint whose audio played
	EventPlayed       = "played"       // the same, as a support article names it
	EventClearedAudio = "clearedAudio" // the answer to clearAudio
	EventStop         = "stop"         // undocumented; read as the end when it comes
)

// Frame is any message Plivo sends but media (the slow path).
type Frame struct {
	Event string `json:"event"`
	// SequenceNumber is a JSON number on Plivo's wire; a string of digits is read too.
	SequenceNumber Count  `json:"sequenceNumber"`
	StreamID       string `json:"streamId"`
	Start          struct {
		CallID      string   `json:"callId"`
		StreamID    string   `json:"streamId"`
		AccountID   string   `json:"accountId"`
		Tracks      []string `json:"tracks"`
		MediaFormat struct {
			Encoding   string `json:"encoding"`
			SampleRate int    `json:"sampleRate"`
		} `json:"mediaFormat"`
	} `json:"start"`
	// ExtraHeaders is the <Stream>'s extraHeaders as Plivo hands them back (see
	// ParseExtraHeaders).
	ExtraHeaders string `json:"extra_headers"`
	DTMF         struct {
		Digit string `json:"digit"`
	} `json:"dtmf"`
	// Name is a checkpoint's name, in playedStream.
	Name string `json:"name"`
}

// Count is a non-negative integer written as a JSON number or a string of digits.
type Count uint64

// UnmarshalJSON reads 4 or "4"; null leaves it alone.
func (n *Count) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, ok := mediastream.Uint(b)
	if !ok {
		return fmt.Errorf("%s is not a non-negative integer", b)
	}
	*n = Count(v)
	return nil
}

// maxFrame bounds a non-media message read on the slow path.
const maxFrame = 64 << 10

// DecodeFrame reads a message other than media.
func DecodeFrame(msg []byte) (Frame, error) {
	var f Frame
	if len(msg) > maxFrame {
		return f, fmt.Errorf("message of %d bytes, more than %d", len(msg), maxFrame)
	}
	if err := json.Unmarshal(msg, &f); err != nil {
		return f, fmt.Errorf("malformed message: %w", err)
	}
	if f.Event == "" {
		return f, errors.New("message without an event")
	}
	return f, nil
}

// ErrNotMedia: the message is not media; read it with DecodeFrame.
var ErrNotMedia = errors.New("not a media message")

// Media is what the fast path reads of a media message.
type Media struct {
	// Payload is the decoded audio, in the dst passed to DecodeMedia.
	Payload []byte
	// Chunk numbers the media frames (for mediastream.Reorder); HasChunk is false when
	// the message had none.
	Chunk    uint64
	HasChunk bool
}

// DecodeMedia is the per-frame fast path: it finds a media message's payload and
// base64-decodes it into dst, and reads its chunk number, without allocating. Any other
// message returns ErrNotMedia.
func DecodeMedia(dst, msg []byte) (Media, error) {
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
		return Media{}, err
	}
	if !bytes.Equal(event, []byte(`"media"`)) {
		return Media{}, ErrNotMedia
	}
	if len(media) == 0 || media[0] != '{' {
		return Media{}, errors.New("media message without a media object")
	}
	var payload, chunk []byte
	if err := mediastream.Members(media, func(key, val []byte) {
		switch string(key) {
		case "payload":
			payload = val
		case "chunk":
			chunk = val
		}
	}); err != nil {
		return Media{}, err
	}
	plain, ok := mediastream.PlainString(payload)
	if !ok {
		return Media{}, errors.New("media message without a plain payload string")
	}
	var m Media
	if chunk != nil {
		if m.Chunk, m.HasChunk = mediastream.Uint(chunk); !m.HasChunk {
			return Media{}, errors.New("media chunk is not a non-negative integer")
		}
	}
	if m.Payload, err = mediastream.DecodeBase64(dst, plain); err != nil {
		return Media{}, err
	}
	return m, nil
}

// maxExtraHeaderPairs bounds the pairs ParseExtraHeaders reads.
const maxExtraHeaderPairs = 16

// ParseExtraHeaders reads extra headers as Plivo hands them back: key=value pairs
// separated by "," (as written in <Stream>) or ";" (as its start example shows). Pairs
// that are not letters and digits are skipped.
func ParseExtraHeaders(s string) map[string]string {
	if len(s) > 4*MaxExtraHeaders {
		return nil
	}
	out := map[string]string{}
	for _, pair := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || k == "" || v == "" || !alphanumeric(k) || !alphanumeric(v) {
			continue
		}
		if len(out) == maxExtraHeaderPairs {
			break
		}
		out[k] = v
	}
	return out
}

// Writer writes the messages Handset sends on one stream. playAudio declares its format
// in every message, so the constant part is rendered once per stream.
type Writer struct {
	playAudio  []byte // {"event":"playAudio","media":{"contentType":…,"sampleRate":…,"payload":"
	checkpoint []byte // {"event":"checkpoint","streamId":"…","name":
	clearAudio []byte // the whole clearAudio message
}

// NewWriter returns the writer for stream streamID whose audio is contentType (one of
// the Content… values of the <Stream>).
func NewWriter(streamID, contentType string) (*Writer, error) {
	enc, rate, ok := strings.Cut(contentType, ";rate=")
	n, err := strconv.Atoi(rate)
	switch contentType {
	case ContentMulaw8k, ContentL16_8k, ContentL16_16k:
	default:
		ok = false
	}
	if !ok || err != nil {
		return nil, fmt.Errorf("content type %q is not one Plivo streams", contentType)
	}
	w := &Writer{}
	w.playAudio = append(w.playAudio, `{"event":"playAudio","media":{"contentType":`...)
	w.playAudio = mediastream.AppendString(w.playAudio, enc)
	w.playAudio = append(w.playAudio, `,"sampleRate":`...)
	w.playAudio = strconv.AppendInt(w.playAudio, int64(n), 10)
	w.playAudio = append(w.playAudio, `,"payload":"`...)
	w.checkpoint = append(w.checkpoint, `{"event":"checkpoint","streamId":`...)
	w.checkpoint = mediastream.AppendString(w.checkpoint, streamID)
	w.checkpoint = append(w.checkpoint, `,"name":`...)
	w.clearAudio = append(w.clearAudio, `{"event":"clearAudio","streamId":`...)
	w.clearAudio = mediastream.AppendString(w.clearAudio, streamID)
	w.clearAudio = append(w.clearAudio, '}')
	return w, nil
}

// AppendPlayAudio appends a playAudio message carrying audio, without allocating when
// dst has room.
func (w *Writer) AppendPlayAudio(dst, audio []byte) []byte {
	dst = append(dst, w.playAudio...)
	dst = base64.StdEncoding.AppendEncode(dst, audio)
	return append(dst, `"}}`...)
}

// AppendCheckpoint appends a checkpoint message: Plivo answers playedStream with name
// once the audio sent before it has played.
func (w *Writer) AppendCheckpoint(dst []byte, name string) []byte {
	dst = append(dst, w.checkpoint...)
	dst = mediastream.AppendString(dst, name)
	return append(dst, '}')
}

// AppendClearAudio appends a clearAudio message: Plivo drops the audio not yet played.
func (w *Writer) AppendClearAudio(dst []byte) []byte { return append(dst, w.clearAudio...) }
