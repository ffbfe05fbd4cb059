package telnyxsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/sim/phone"
)

func testWire(t *testing.T, codec string, rate int, o StreamOptions) *wire {
	t.Helper()
	w, err := newWire(StreamOrder{CallControlID: "v3:c1", From: "+15550001111", To: "+15550002222",
		Codec: codec, BidirectionalCodec: codec, BidirectionalMode: "rtp", SampleRate: rate}, o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// frameMsg is a media message the caller sent, as Telnyx documents it.
type frameMsg struct {
	Event          string `json:"event"`
	SequenceNumber string `json:"sequence_number"`
	StreamID       string `json:"stream_id"`
	Media          struct {
		Track, Chunk, Timestamp, Payload string
	} `json:"media"`
}

func TestCallerFramesAreTelnyxJSON(t *testing.T) {
	w := testWire(t, "PCMU", 8000, StreamOptions{})
	hs := w.Handshake()
	if len(hs) != 2 || !bytes.Contains(hs[0], []byte(`"connected"`)) {
		t.Fatalf("handshake %s", hs)
	}
	var start struct {
		Event          string `json:"event"`
		SequenceNumber string `json:"sequence_number"`
		Start          struct {
			CallControlID string `json:"call_control_id"`
			MediaFormat   struct {
				Encoding   string
				SampleRate int `json:"sample_rate"`
			} `json:"media_format"`
		}
	}
	if err := json.Unmarshal(hs[1], &start); err != nil || start.Event != "start" || start.SequenceNumber != "1" || start.Start.CallControlID != "v3:c1" || start.Start.MediaFormat.Encoding != "PCMU" || start.Start.MediaFormat.SampleRate != 8000 {
		t.Fatalf("start %s: %v", hs[1], err)
	}
	var m frameMsg
	msg := w.AppendMedia(nil, []byte{1, 2, 3}, phone.Frame{Chunk: 7, At: 120 * time.Millisecond})
	if err := json.Unmarshal(msg, &m); err != nil || m.Event != "media" || m.Media.Chunk != "7" || m.Media.Timestamp != "120" ||
		m.SequenceNumber != "2" || m.Media.Track != "inbound" || m.StreamID == "" {
		t.Fatalf("media %s: %v", msg, err)
	}
	if p, _ := base64.StdEncoding.DecodeString(m.Media.Payload); !bytes.Equal(p, []byte{1, 2, 3}) {
		t.Errorf("payload %x", p)
	}
}

func TestCallerDecodesHandsetsFrames(t *testing.T) {
	w := testWire(t, "PCMU", 8000, StreamOptions{})
	in, err := w.Decode(websocket.MessageText, []byte(`{"event":"media","media":{"payload":"AQID"}}`), nil)
	if err != nil || in.Kind != phone.InMedia || !bytes.Equal(in.Audio, []byte{1, 2, 3}) {
		t.Fatalf("fast media: %+v %v", in, err)
	}
	in, err = w.Decode(websocket.MessageText, []byte(`{ "event": "media", "media": {"payload": "AQID"} }`), nil)
	if err != nil || in.Kind != phone.InMedia || !bytes.Equal(in.Audio, []byte{1, 2, 3}) {
		t.Fatalf("spaced media: %+v %v", in, err)
	}
	if in, err := w.Decode(websocket.MessageText, []byte(`{"event":"mark","mark":{"name":"m1"}}`), nil); err != nil || in.Kind != phone.InMark || in.Name != "m1" {
		t.Fatalf("mark: %+v %v", in, err)
	}
	if in, err := w.Decode(websocket.MessageText, []byte(`{"event":"clear"}`), nil); err != nil || in.Kind != phone.InClear {
		t.Fatalf("clear: %+v %v", in, err)
	}
	for _, bad := range []string{`{"event":"media","media":{}}`, `{"event":"mark","mark":{}}`, `{"event":"dance"}`, `nope`, `{}`} {
		if _, err := w.Decode(websocket.MessageText, []byte(bad), nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := w.Decode(websocket.MessageBinary, []byte(`{"event":"clear"}`), nil); err == nil {
		t.Error("a binary frame accepted")
	}
}

// TestNotRTPPlaysNothing: Telnyx's default bidirectional mode plays files, not the raw
// audio Handset sends, so a stream opened without "rtp" is silence to the caller.
func TestNotRTPPlaysNothing(t *testing.T) {
	w, err := newWire(StreamOrder{CallControlID: "v3:c1", BidirectionalCodec: "PCMU", BidirectionalMode: "mp3", SampleRate: 8000}, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := w.Decode(websocket.MessageText, []byte(`{"event":"media","media":{"payload":"AQID"}}`), nil)
	if err != nil || in.Kind != phone.InIgnore {
		t.Fatalf("%+v %v", in, err)
	}
}

func TestCallerL16ByteOrder(t *testing.T) {
	w := testWire(t, "L16", 16000, StreamOptions{})
	var m frameMsg
	_ = json.Unmarshal(w.AppendMedia(nil, []byte{0x34, 0x12}, phone.Frame{Chunk: 1}), &m)
	if p, _ := base64.StdEncoding.DecodeString(m.Media.Payload); !bytes.Equal(p, []byte{0x12, 0x34}) {
		t.Errorf("sent %x for little-endian 0x1234, want big-endian", p)
	}
	in, err := w.Decode(websocket.MessageText, []byte(`{"event":"media","media":{"payload":"`+base64.StdEncoding.EncodeToString([]byte{0x12, 0x34})+`"}}`), nil)
	if err != nil || !bytes.Equal(in.Audio, []byte{0x34, 0x12}) {
		t.Errorf("played %x, %v", in.Audio, err)
	}
	if _, err := w.Decode(websocket.MessageText, []byte(`{"event":"media","media":{"payload":"AQID"}}`), nil); err == nil {
		t.Error("an odd-sized L16 payload accepted")
	}
	le := testWire(t, "L16", 16000, StreamOptions{L16LittleEndian: true})
	_ = json.Unmarshal(le.AppendMedia(nil, []byte{0x34, 0x12}, phone.Frame{Chunk: 1}), &m)
	if p, _ := base64.StdEncoding.DecodeString(m.Media.Payload); !bytes.Equal(p, []byte{0x34, 0x12}) {
		t.Errorf("L16LittleEndian sent %x", p)
	}
}

// TestShuffleWindow: frames overtake each other, one repeats, and every frame but the
// last held one goes out.
func TestShuffleWindow(t *testing.T) {
	w := testWire(t, "PCMU", 8000, StreamOptions{ShuffleWindow: 3})
	var chunks []int
	for n := 1; n <= 9; n++ {
		var m frameMsg
		if err := json.Unmarshal(w.AppendMedia(nil, []byte{byte(n)}, phone.Frame{Chunk: n}), &m); err != nil {
			t.Fatal(err)
		}
		c, _ := strconv.Atoi(m.Media.Chunk)
		chunks = append(chunks, c)
	}
	seen := map[int]int{}
	inOrder := true
	for i, c := range chunks {
		seen[c]++
		if i > 0 && c < chunks[i-1] {
			inOrder = false
		}
	}
	if inOrder {
		t.Errorf("chunks %v are in order", chunks)
	}
	missing := 0
	for n := 1; n <= 9; n++ {
		if seen[n] == 0 {
			missing++
		}
	}
	if missing > 1 || seen[2] != 2 {
		t.Errorf("chunks %v: want all but the one still held, and the repeat of 2", chunks)
	}
}

func TestCallerMediaAllocatesNothing(t *testing.T) {
	for _, o := range []StreamOptions{{}, {ShuffleWindow: 3}} {
		w := testWire(t, "L16", 16000, o)
		payload := make([]byte, 640)
		dst := make([]byte, 0, 4096)
		n := 0
		for range 10 { // warm the held and swap buffers
			n++
			dst = w.AppendMedia(dst[:0], payload, phone.Frame{Chunk: n})
		}
		if a := testing.AllocsPerRun(200, func() {
			n++
			dst = w.AppendMedia(dst[:0], payload, phone.Frame{Chunk: n, At: time.Duration(n) * 20 * time.Millisecond})
		}); a != 0 {
			t.Errorf("AppendMedia %+v allocates %.1f times per frame", o, a)
		}
		msg := []byte(`{"event":"media","media":{"payload":"` + base64.StdEncoding.EncodeToString(payload) + `"}}`)
		scratch := make([]byte, 0, 4096)
		if a := testing.AllocsPerRun(200, func() {
			in, err := w.Decode(websocket.MessageText, msg, scratch)
			if err != nil || in.Kind != phone.InMedia {
				panic(err)
			}
		}); a != 0 {
			t.Errorf("Decode allocates %.1f times per frame", a)
		}
	}
}
