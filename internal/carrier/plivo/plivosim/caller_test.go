package plivosim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/sim/phone"
)

func testWire(t *testing.T, contentType string, o StreamOptions) *wire {
	t.Helper()
	w, err := newWire(StreamOrder{CallUUID: "6b1d3c5e-0000-4000-8000-000000000001", ContentType: contentType,
		Headers: map[string]string{"handsettoken": "abc123"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestCallerFramesArePlivoJSON: start first with the extra headers handed back and no
// connected; media with numbers as numbers; played checkpoints only; clearedAudio; no stop.
func TestCallerFramesArePlivoJSON(t *testing.T) {
	w := testWire(t, "audio/x-mulaw;rate=8000", StreamOptions{})
	hs := w.Handshake()
	if len(hs) != 1 {
		t.Fatalf("handshake %s: want start alone", hs)
	}
	var start struct {
		Event          string `json:"event"`
		SequenceNumber int    `json:"sequenceNumber"`
		Start          struct {
			CallID, StreamID string
			MediaFormat      struct {
				Encoding   string
				SampleRate int
			}
		}
		ExtraHeaders string `json:"extra_headers"`
	}
	if err := json.Unmarshal(hs[0], &start); err != nil || start.Event != "start" || start.SequenceNumber != 1 ||
		start.Start.CallID != w.order.CallUUID || start.Start.StreamID == "" || start.Start.MediaFormat.Encoding != "audio/x-mulaw" ||
		start.Start.MediaFormat.SampleRate != 8000 || start.ExtraHeaders != "handsettoken=abc123" {
		t.Fatalf("start %s: %v", hs[0], err)
	}
	var m struct {
		Event          string
		SequenceNumber int
		StreamID       string
		Media          struct {
			Track, Timestamp, Payload string
			Chunk                     int
		}
	}
	msg := w.AppendMedia(nil, []byte{1, 2, 3}, phone.Frame{Chunk: 7, At: 120 * time.Millisecond})
	if err := json.Unmarshal(msg, &m); err != nil || m.Event != "media" || m.SequenceNumber != 2 || m.StreamID != start.Start.StreamID ||
		m.Media.Chunk != 7 || m.Media.Timestamp != "120" || m.Media.Track != "inbound" || m.Media.Payload != base64.StdEncoding.EncodeToString([]byte{1, 2, 3}) {
		t.Fatalf("media %s: %v", msg, err)
	}
	if got := w.Mark("t1", true); got != nil {
		t.Errorf("a cleared checkpoint was answered: %s", got)
	}
	if got := string(w.Mark("t1", false)); !strings.Contains(got, `"event":"playedStream"`) || !strings.Contains(got, `"name":"t1"`) {
		t.Errorf("played checkpoint %s", got)
	}
	if got := string(w.Cleared()); !strings.Contains(got, `"event":"clearedAudio"`) {
		t.Errorf("cleared %s", got)
	}
	if w.Stop() != nil {
		t.Error("the caller sends a stop; Plivo sends none")
	}
	played := testWire(t, "audio/x-mulaw;rate=8000", StreamOptions{CheckpointEvent: CheckpointPlayed, HeaderSeparator: ","})
	if got := string(played.Mark("t1", false)); !strings.Contains(got, `"event":"played"`) {
		t.Errorf("checkpoint answered as %s", got)
	}
}

// TestCallerDecodesHandsetsFrames: playAudio must declare the stream's format; checkpoint
// and clearAudio must name the stream; anything else is a protocol error.
func TestCallerDecodesHandsetsFrames(t *testing.T) {
	w := testWire(t, "audio/x-l16;rate=16000", StreamOptions{})
	id := w.id
	payload := base64.StdEncoding.EncodeToString([]byte{1, 0, 2, 0})
	for _, c := range []struct {
		msg  string
		kind phone.InKind
		bad  bool
	}{
		{`{"event":"playAudio","media":{"contentType":"audio/x-l16","sampleRate":16000,"payload":"` + payload + `"}}`, phone.InMedia, false},
		{`{"event":"playAudio","media":{"payload":"` + payload + `","sampleRate":16000,"contentType":"audio/x-l16"}}`, phone.InMedia, false},
		{`{"event":"playAudio","media":{"contentType":"audio/x-l16","sampleRate":8000,"payload":"` + payload + `"}}`, 0, true},
		{`{"event":"playAudio","media":{"contentType":"audio/x-mulaw","sampleRate":16000,"payload":"` + payload + `"}}`, 0, true},
		{`{"event":"playAudio","media":{"payload":"` + payload + `"}}`, 0, true},
		{`{"event":"playAudio","media":{"contentType":"audio/x-l16","sampleRate":16000,"payload":"AA=="}}`, 0, true}, // one byte: no whole sample
		{`{"event":"checkpoint","streamId":"` + id + `","name":"t1"}`, phone.InMark, false},
		{`{"event":"checkpoint","streamId":"other","name":"t1"}`, 0, true},
		{`{"event":"checkpoint","name":"t1"}`, 0, true},
		{`{"event":"clearAudio","streamId":"` + id + `"}`, phone.InClear, false},
		{`{"event":"mark","mark":{"name":"t1"}}`, 0, true},
		{`not json`, 0, true},
	} {
		in, err := w.Decode(websocket.MessageText, []byte(c.msg), nil)
		var we *phone.WireError
		switch {
		case c.bad && (err == nil || !errors.As(err, &we) || we.Code != CodeMalformedFrame):
			t.Errorf("%s: %v, want a protocol error", c.msg, err)
		case !c.bad && (err != nil || in.Kind != c.kind):
			t.Errorf("%s: kind %v, %v", c.msg, in.Kind, err)
		}
	}
	if _, err := w.Decode(websocket.MessageBinary, []byte("x"), nil); err == nil {
		t.Error("a binary frame was taken")
	}
}

// TestCallerL16ByteOrder: little-endian by default, as Handset's PCM; network order when
// asked, both ways.
func TestCallerL16ByteOrder(t *testing.T) {
	sample := []byte{0x34, 0x12}
	little := testWire(t, "audio/x-l16;rate=16000", StreamOptions{})
	big := testWire(t, "audio/x-l16;rate=16000", StreamOptions{L16BigEndian: true})
	enc := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	if msg := little.AppendMedia(nil, sample, phone.Frame{Chunk: 1}); !bytes.Contains(msg, []byte(enc([]byte{0x34, 0x12}))) {
		t.Errorf("little-endian frame %s", msg)
	}
	if msg := big.AppendMedia(nil, sample, phone.Frame{Chunk: 1}); !bytes.Contains(msg, []byte(enc([]byte{0x12, 0x34}))) {
		t.Errorf("big-endian frame %s", msg)
	}
	in, err := big.Decode(websocket.MessageText, []byte(`{"event":"playAudio","media":{"contentType":"audio/x-l16","sampleRate":16000,"payload":"`+enc([]byte{0x12, 0x34})+`"}}`), nil)
	if err != nil || !bytes.Equal(in.Audio, sample) {
		t.Errorf("decoded %x, %v", in.Audio, err)
	}
}

// TestCallerMediaAllocatesNothing: the per-frame paths both ways.
func TestCallerMediaAllocatesNothing(t *testing.T) {
	w := testWire(t, "audio/x-mulaw;rate=8000", StreamOptions{})
	payload := make([]byte, 160)
	dst := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { dst = w.AppendMedia(dst[:0], payload, phone.Frame{Chunk: 9, At: time.Second}) }); n != 0 {
		t.Errorf("AppendMedia allocates %v times a frame", n)
	}
	msg := []byte(`{"event":"playAudio","media":{"contentType":"audio/x-mulaw","sampleRate":8000,"payload":"` + base64.StdEncoding.EncodeToString(payload) + `"}}`)
	scratch := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() {
		in, err := w.Decode(websocket.MessageText, msg, scratch)
		if err != nil || in.Kind != phone.InMedia {
			t.Fatal(err)
		}
		scratch = in.Scratch
	}); n != 0 {
		t.Errorf("Decode of playAudio allocates %v times a frame", n)
	}
}
