package telnyxsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/phone"
)

// Media stream error codes the simulated caller records for a message from Handset that
// Telnyx would reject (UNCONFIRMED values: Telnyx documents an `error` event, not a table).
const (
	CodeMalformedFrame = 100003
	CodeBufferOverflow = 100005
)

// StreamOptions are how the simulated Telnyx caller's media stream behaves where Telnyx's
// documentation leaves room: each is one of the hidden differences Handset must survive.
type StreamOptions struct {
	// ChunkMS is the audio per media message, in milliseconds: 20 when zero; any multiple
	// of 20 (Telnyx documents 20 ms up to seconds).
	ChunkMS int
	// ShuffleWindow, when positive, puts the media out of order: every ShuffleWindow-th
	// frame overtakes the frame before it, and the first overtaking repeats a frame already
	// sent (Telnyx promises no order; the chunk numbers tell).
	ShuffleWindow int
	// PreStartFrames sends this many media frames of silence and one DTMF key ("1")
	// between connected and start.
	PreStartFrames int
	// EchoMarksOnClear reports the marks a clear dropped, as Twilio does (UNCONFIRMED for
	// Telnyx); false reports only marks whose audio played.
	EchoMarksOnClear bool
	// L16LittleEndian carries L16 in little-endian byte order instead of RTP's network
	// byte order (UNCONFIRMED which one Telnyx sends; big-endian is assumed).
	L16LittleEndian bool
}

// wire is Telnyx's media stream as the caller speaks it (phone.Wire): snake_case, numbers
// as strings, a stream_id on every message the caller sends and none needed on Handset's.
type wire struct {
	order  StreamOrder
	opts   StreamOptions
	format audio.Format
	swap   bool // L16 big-endian on the wire: swap 16-bit samples both ways
	silent bool // the stream is not bidirectional RTP: Handset's audio is not played
	id     string
	seq    int

	swapped []byte // the writer's reused byte-swap buffer
	held    []byte // a media message held back to be overtaken (ShuffleWindow)
	last    []byte // the last media message sent, for a repeat
}

var _ phone.Wire = (*wire)(nil)

// newWire is the wire for a stream order.
func newWire(o StreamOrder, opts StreamOptions) (*wire, error) {
	f, err := codecFormat(o.BidirectionalCodec, o.SampleRate)
	if err != nil {
		return nil, err
	}
	return &wire{order: o, opts: opts, format: f, swap: f.Encoding == audio.PCM16 && !opts.L16LittleEndian,
		silent: o.BidirectionalMode != "rtp", id: randomUUID()}, nil
}

// codecFormat is a stream codec as audio: PCMU and PCMA at 8 kHz, L16 at its rate.
func codecFormat(codec string, rate int) (audio.Format, error) {
	switch codec {
	case "PCMU", "":
		return audio.Telephone, nil
	case "PCMA":
		return audio.Format{Encoding: audio.Alaw, Rate: 8000}, nil
	case "L16":
		if rate != 8000 && rate != 16000 {
			return audio.Format{}, fmt.Errorf("telnyxsim: the caller plays L16 at 8 or 16 kHz, not %d", rate)
		}
		return audio.Format{Encoding: audio.PCM16, Rate: rate}, nil
	}
	return audio.Format{}, fmt.Errorf("telnyxsim: the caller does not play %s", codec)
}

func (w *wire) Info() phone.Info {
	frame := audio.FrameDuration
	if w.opts.ChunkMS > 0 {
		frame = time.Duration(w.opts.ChunkMS) * time.Millisecond
	}
	return phone.Info{Name: "telnyx", Format: w.format, Frame: frame,
		MalformedCode: CodeMalformedFrame, OverflowCode: CodeBufferOverflow}
}

func (w *wire) next() string { w.seq++; return strconv.Itoa(w.seq) }

func (w *wire) Handshake() [][]byte {
	msgs := [][]byte{[]byte(`{"event":"connected","version":"1.0.0"}`)}
	if n := w.opts.PreStartFrames; n > 0 {
		silence := make([]byte, w.format.Bytes(w.Info().Frame))
		if w.format.Encoding == audio.Mulaw {
			for i := range silence {
				silence[i] = 0xff
			}
		}
		for i := 1; i <= n; i++ {
			msgs = append(msgs, w.mediaMsg(nil, silence, i, 0))
		}
		msgs = append(msgs, w.DTMF("1"))
	}
	start, _ := json.Marshal(map[string]any{
		"event": "start", "sequence_number": w.next(), "stream_id": w.id,
		"start": map[string]any{
			"user_id": "telnyxsim", "call_control_id": w.order.CallControlID, "client_state": nullable(w.order.ClientState),
			"from": w.order.From, "to": w.order.To,
			"media_format":      map[string]any{"encoding": cmpOr(w.order.Codec, "PCMU"), "sample_rate": w.format.Rate, "channels": 1},
			"custom_parameters": map[string]any{},
		},
	})
	return append(msgs, start)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// AppendMedia renders the frame; with ShuffleWindow, some frames overtake the one before.
func (w *wire) AppendMedia(dst, payload []byte, f phone.Frame) []byte {
	if w.opts.ShuffleWindow <= 0 {
		return w.mediaMsg(dst, payload, f.Chunk, f.At)
	}
	overtake := f.Chunk%w.opts.ShuffleWindow == 0
	switch {
	case w.held == nil && !overtake:
		dst = w.mediaMsg(dst, payload, f.Chunk, f.At)
	case w.held == nil:
		// Hold this frame and repeat the last one: from now on one frame is held back.
		w.held = w.mediaMsg(w.held, payload, f.Chunk, f.At)
		if w.last == nil {
			dst = append(dst, w.held...)
			w.held = nil
		} else {
			dst = append(dst, w.last...)
		}
	case overtake:
		dst = w.mediaMsg(dst, payload, f.Chunk, f.At) // overtakes the held frame
	default:
		dst = append(dst, w.held...)
		w.held = w.mediaMsg(w.held[:0], payload, f.Chunk, f.At)
	}
	w.last = append(w.last[:0], dst...)
	return dst
}

// mediaMsg appends one media message without allocating beyond dst's growth.
func (w *wire) mediaMsg(dst, payload []byte, chunk int, at time.Duration) []byte {
	if w.swap {
		w.swapped = append(w.swapped[:0], payload...)
		swap16(w.swapped)
		payload = w.swapped
	}
	w.seq++
	dst = append(dst, `{"event":"media","sequence_number":"`...)
	dst = strconv.AppendInt(dst, int64(w.seq), 10)
	dst = append(dst, `","stream_id":"`...)
	dst = append(dst, w.id...)
	dst = append(dst, `","media":{"track":"inbound","chunk":"`...)
	dst = strconv.AppendInt(dst, int64(chunk), 10)
	dst = append(dst, `","timestamp":"`...)
	dst = strconv.AppendInt(dst, at.Milliseconds(), 10)
	dst = append(dst, `","payload":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, payload)
	return append(dst, `"}}`...)
}

// Mark reports a played mark; a cleared one only with EchoMarksOnClear.
func (w *wire) Mark(name string, cleared bool) []byte {
	if cleared && !w.opts.EchoMarksOnClear {
		return nil
	}
	return w.event("mark", map[string]any{"name": name})
}

// Cleared is nil: Telnyx sends nothing of its own after a clear.
func (w *wire) Cleared() []byte { return nil }

func (w *wire) DTMF(digit string) []byte { return w.event("dtmf", map[string]any{"digit": digit}) }

func (w *wire) Stop() []byte {
	return w.event("stop", map[string]any{"call_control_id": w.order.CallControlID})
}

// event is a message other than media: {"event":kind,"sequence_number":…,kind:body}.
func (w *wire) event(kind string, body map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"event": kind, "sequence_number": w.next(), "stream_id": w.id, kind: body})
	return b
}

// The media message exactly as Handset writes it, around the payload.
const (
	mediaHead = `{"event":"media","media":{"payload":"`
	mediaTail = `"}}`
)

// Decode reads Handset's media on a fast path and everything else with encoding/json.
func (w *wire) Decode(typ websocket.MessageType, data, scratch []byte) (phone.Inbound, error) {
	if typ != websocket.MessageText {
		return phone.Inbound{}, &phone.WireError{Code: CodeMalformedFrame, Detail: "binary frame"}
	}
	if audio, grown, ok := w.fastMedia(data, scratch); ok {
		return w.media(audio, grown), nil
	}
	var m struct {
		Event string `json:"event"`
		Media *struct {
			Payload *string `json:"payload"`
		} `json:"media"`
		Mark *struct {
			Name *string `json:"name"`
		} `json:"mark"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return phone.Inbound{}, &phone.WireError{Code: CodeMalformedFrame, Detail: "not JSON: " + err.Error()}
	}
	switch m.Event {
	case "media":
		if m.Media == nil || m.Media.Payload == nil {
			return phone.Inbound{}, &phone.WireError{Code: CodeMalformedFrame, Detail: "media without media.payload"}
		}
		raw, err := base64.StdEncoding.DecodeString(*m.Media.Payload)
		if err != nil {
			return phone.Inbound{}, &phone.WireError{Code: CodeMalformedFrame, Detail: "media payload is not base64: " + err.Error()}
		}
		if err := w.checkSamples(raw); err != nil {
			return phone.Inbound{}, err
		}
		return w.media(raw, scratch), nil
	case "mark":
		if m.Mark == nil || m.Mark.Name == nil || *m.Mark.Name == "" {
			return phone.Inbound{}, &phone.WireError{Code: CodeMalformedFrame, Detail: "mark without mark.name"}
		}
		return phone.Inbound{Kind: phone.InMark, Name: *m.Mark.Name, Scratch: scratch}, nil
	case "clear":
		return phone.Inbound{Kind: phone.InClear, Scratch: scratch}, nil
	case "":
		return phone.Inbound{}, &phone.WireError{Code: CodeMalformedFrame, Detail: "no event"}
	}
	return phone.Inbound{}, &phone.WireError{Code: CodeMalformedFrame, Detail: fmt.Sprintf("unknown event %q", m.Event)}
}

// media is Handset's audio as the caller plays it: nothing unless the stream is RTP (as on
// Telnyx, whose default mode queues files and drops raw audio), L16 swapped into the
// little-endian PCM the phone core plays.
func (w *wire) media(audio, scratch []byte) phone.Inbound {
	if w.silent {
		return phone.Inbound{Kind: phone.InIgnore, Scratch: scratch}
	}
	if w.swap {
		swap16(audio)
	}
	return phone.Inbound{Kind: phone.InMedia, Audio: audio, Scratch: scratch}
}

// checkSamples refuses L16 audio that is not whole samples.
func (w *wire) checkSamples(raw []byte) error {
	if w.format.Encoding == audio.PCM16 && len(raw)%2 != 0 {
		return &phone.WireError{Code: CodeMalformedFrame, Detail: fmt.Sprintf("L16 payload of %d bytes", len(raw))}
	}
	return nil
}

// fastMedia takes only a message exactly as Handset writes media, with a payload that
// decodes, into scratch (grown when short); anything else goes the general way, so the
// two paths cannot disagree.
func (w *wire) fastMedia(msg, scratch []byte) (audio, grown []byte, ok bool) {
	if len(msg) < len(mediaHead)+len(mediaTail) || string(msg[:len(mediaHead)]) != mediaHead ||
		string(msg[len(msg)-len(mediaTail):]) != mediaTail {
		return nil, nil, false
	}
	payload := msg[len(mediaHead) : len(msg)-len(mediaTail)]
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
