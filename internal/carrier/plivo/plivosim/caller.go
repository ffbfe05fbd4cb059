package plivosim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/phone"
)

// Error codes the simulated caller records for a message from Handset that Plivo would
// reject. Plivo publishes no table for its audio stream: these are the fake's own.
const (
	CodeMalformedFrame = 4000
	CodeBufferOverflow = 4001
)

// Checkpoint answers: Plivo's stream documentation names playedStream; a support
// article names it played (UNCONFIRMED which one a live stream sends).
const (
	CheckpointPlayedStream = "playedStream"
	CheckpointPlayed       = "played"
)

// StreamOptions are how the simulated Plivo caller's stream behaves where Plivo's
// documentation leaves room: each is a difference Handset must survive.
type StreamOptions struct {
	// CheckpointEvent is the event answering a checkpoint whose audio played:
	// CheckpointPlayedStream (default) or CheckpointPlayed.
	CheckpointEvent string
	// HeaderSeparator joins the extra headers as start hands them back: ";" (the start
	// example's, default) or ",".
	HeaderSeparator string
	// ChunkMS is the audio per media message, in milliseconds: 20 when zero; any multiple
	// of 20.
	ChunkMS int
	// L16BigEndian carries L16 in network byte order both ways (UNCONFIRMED which one
	// Plivo uses; little-endian is assumed).
	L16BigEndian bool
}

// wire is Plivo's audio stream as the caller speaks it (phone.Wire): camelCase, numbers
// as JSON numbers, start first and no connected, a checkpoint answered only when its
// audio played, clearedAudio after clearAudio, and no stop: the socket closes.
type wire struct {
	order      StreamOrder
	opts       StreamOptions
	format     audio.Format
	encoding   string // the contentType's media type: audio/x-mulaw or audio/x-l16
	swap       bool   // L16 big-endian on the wire
	id         string // the streamId
	seq        int
	playHead   []byte // playAudio exactly as a well-behaved sender writes it, to the payload
	swapped    []byte // the writer's reused byte-swap buffer
	checkpoint string
}

var _ phone.Wire = (*wire)(nil)

// newWire is the wire for a <Stream> order.
func newWire(o StreamOrder, opts StreamOptions) (*wire, error) {
	enc, rate, err := contentFormat(o.ContentType)
	if err != nil {
		return nil, err
	}
	f := audio.Format{Encoding: audio.PCM16, Rate: rate}
	if enc == "audio/x-mulaw" {
		f = audio.Telephone
	}
	w := &wire{order: o, opts: opts, format: f, encoding: enc, swap: f.Encoding == audio.PCM16 && opts.L16BigEndian,
		id: newUUID(), checkpoint: or(opts.CheckpointEvent, CheckpointPlayedStream)}
	w.playHead = fmt.Appendf(nil, `{"event":"playAudio","media":{"contentType":%q,"sampleRate":%d,"payload":"`, enc, rate)
	return w, nil
}

// contentFormat splits a <Stream> contentType into its media type and rate.
func contentFormat(ct string) (enc string, rate int, err error) {
	if !contentTypes[ct] {
		return "", 0, fmt.Errorf("plivosim: the caller does not play %q", ct)
	}
	enc, r, _ := strings.Cut(ct, ";rate=")
	rate, err = strconv.Atoi(r)
	return enc, rate, err
}

func (w *wire) Info() phone.Info {
	frame := audio.FrameDuration
	if w.opts.ChunkMS > 0 {
		frame = time.Duration(w.opts.ChunkMS) * time.Millisecond
	}
	return phone.Info{Name: "plivo", Format: w.format, Frame: frame,
		MalformedCode: CodeMalformedFrame, OverflowCode: CodeBufferOverflow}
}

// Handshake is start alone: Plivo sends no connected.
func (w *wire) Handshake() [][]byte {
	var pairs []string
	for k, v := range w.order.Headers {
		pairs = append(pairs, k+"="+v)
	}
	w.seq++
	start, _ := json.Marshal(map[string]any{
		"event": "start", "sequenceNumber": w.seq,
		"start": map[string]any{"callId": w.order.CallUUID, "streamId": w.id, "accountId": DefaultAuthID,
			"tracks": []string{"inbound"}, "mediaFormat": map[string]any{"encoding": w.encoding, "sampleRate": w.format.Rate}},
		"extra_headers": strings.Join(pairs, or(w.opts.HeaderSeparator, ";")),
	})
	return [][]byte{start}
}

// AppendMedia appends one media message without allocating beyond dst's growth.
func (w *wire) AppendMedia(dst, payload []byte, f phone.Frame) []byte {
	if w.swap {
		w.swapped = append(w.swapped[:0], payload...)
		swap16(w.swapped)
		payload = w.swapped
	}
	w.seq++
	dst = append(dst, `{"event":"media","sequenceNumber":`...)
	dst = strconv.AppendInt(dst, int64(w.seq), 10)
	dst = append(dst, `,"streamId":"`...)
	dst = append(dst, w.id...)
	dst = append(dst, `","media":{"track":"inbound","timestamp":"`...)
	dst = strconv.AppendInt(dst, f.At.Milliseconds(), 10)
	dst = append(dst, `","chunk":`...)
	dst = strconv.AppendInt(dst, int64(f.Chunk), 10)
	dst = append(dst, `,"payload":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, payload)
	return append(dst, `"}}`...)
}

// Mark answers a checkpoint whose audio played; a cleared one gets nothing.
func (w *wire) Mark(name string, cleared bool) []byte {
	if cleared {
		return nil
	}
	return w.event(map[string]any{"event": w.checkpoint, "name": name})
}

// Cleared is clearedAudio, Plivo's answer to clearAudio.
func (w *wire) Cleared() []byte { return w.event(map[string]any{"event": "clearedAudio"}) }

func (w *wire) DTMF(digit string) []byte {
	return w.event(map[string]any{"event": "dtmf", "dtmf": map[string]any{"digit": digit}})
}

// Stop is nil: Plivo sends no stop, the socket closes.
func (w *wire) Stop() []byte { return nil }

// event is a message other than media, with the stream's id and the next number.
func (w *wire) event(m map[string]any) []byte {
	w.seq++
	m["sequenceNumber"], m["streamId"] = w.seq, w.id
	b, _ := json.Marshal(m)
	return b
}

// Decode reads Handset's playAudio on a fast path and everything else with
// encoding/json.
func (w *wire) Decode(typ websocket.MessageType, data, scratch []byte) (phone.Inbound, error) {
	if typ != websocket.MessageText {
		return phone.Inbound{}, &phone.WireError{Code: CodeMalformedFrame, Detail: "binary frame"}
	}
	if raw, grown, ok := w.fastPlay(data, scratch); ok {
		return w.media(raw, grown), nil
	}
	var m struct {
		Event    string  `json:"event"`
		StreamID *string `json:"streamId"`
		Name     *string `json:"name"`
		Media    *struct {
			ContentType string  `json:"contentType"`
			SampleRate  int     `json:"sampleRate"`
			Payload     *string `json:"payload"`
		} `json:"media"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return phone.Inbound{}, malformed("not JSON: " + err.Error())
	}
	switch m.Event {
	case "playAudio":
		if m.Media == nil || m.Media.Payload == nil {
			return phone.Inbound{}, malformed("playAudio without media.payload")
		}
		if m.Media.ContentType != w.encoding || m.Media.SampleRate != w.format.Rate {
			return phone.Inbound{}, malformed(fmt.Sprintf("playAudio declares %q at %d, the stream is %q at %d",
				m.Media.ContentType, m.Media.SampleRate, w.encoding, w.format.Rate))
		}
		raw, err := base64.StdEncoding.DecodeString(*m.Media.Payload)
		if err != nil {
			return phone.Inbound{}, malformed("playAudio payload is not base64: " + err.Error())
		}
		if err := w.checkSamples(raw); err != nil {
			return phone.Inbound{}, err
		}
		return w.media(raw, scratch), nil
	case "checkpoint":
		if err := w.checkStream(m.StreamID); err != nil {
			return phone.Inbound{}, err
		}
		if m.Name == nil || *m.Name == "" {
			return phone.Inbound{}, malformed("checkpoint without a name")
		}
		return phone.Inbound{Kind: phone.InMark, Name: *m.Name, Scratch: scratch}, nil
	case "clearAudio":
		if err := w.checkStream(m.StreamID); err != nil {
			return phone.Inbound{}, err
		}
		return phone.Inbound{Kind: phone.InClear, Scratch: scratch}, nil
	case "":
		return phone.Inbound{}, malformed("no event")
	}
	return phone.Inbound{}, malformed(fmt.Sprintf("unknown event %q", m.Event))
}

func malformed(detail string) error {
	return &phone.WireError{Code: CodeMalformedFrame, Detail: detail}
}

// checkStream refuses a checkpoint or clearAudio that does not name this stream.
func (w *wire) checkStream(id *string) error {
	switch {
	case id == nil:
		return malformed("no streamId")
	case *id != w.id:
		return malformed(fmt.Sprintf("streamId %q is not this stream's", *id))
	}
	return nil
}

// media is Handset's audio as the phone core plays it (little-endian PCM).
func (w *wire) media(raw, scratch []byte) phone.Inbound {
	if w.swap {
		swap16(raw)
	}
	return phone.Inbound{Kind: phone.InMedia, Audio: raw, Scratch: scratch}
}

// checkSamples refuses L16 audio that is not whole samples.
func (w *wire) checkSamples(raw []byte) error {
	if w.format.Encoding == audio.PCM16 && len(raw)%2 != 0 {
		return malformed(fmt.Sprintf("L16 payload of %d bytes", len(raw)))
	}
	return nil
}

// fastPlay takes only a playAudio exactly as playHead spells it, with a payload that
// decodes, into scratch (grown when short); anything else goes the general way, so the
// two paths cannot disagree.
func (w *wire) fastPlay(msg, scratch []byte) (raw, grown []byte, ok bool) {
	const tail = `"}}`
	if len(msg) < len(w.playHead)+len(tail) || !bytes.HasPrefix(msg, w.playHead) || !bytes.HasSuffix(msg, []byte(tail)) {
		return nil, nil, false
	}
	payload := msg[len(w.playHead) : len(msg)-len(tail)]
	if bytes.ContainsAny(payload, `"\`) {
		return nil, nil, false
	}
	n := base64.StdEncoding.DecodedLen(len(payload))
	if cap(scratch) < n {
		scratch = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(scratch[:n], payload)
	if err != nil || w.checkSamples(scratch[:n]) != nil {
		return nil, nil, false
	}
	return scratch[:n], scratch, true
}

// swap16 swaps the bytes of every 16-bit sample in place.
func swap16(b []byte) {
	for i := 0; i+1 < len(b); i += 2 {
		b[i], b[i+1] = b[i+1], b[i]
	}
}
