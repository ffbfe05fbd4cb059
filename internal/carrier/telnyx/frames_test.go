package telnyx

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// mediaFrame is a media message as Telnyx sends it; seq is written raw (a quoted string or
// a bare number).
func mediaFrame(seq string, payload []byte) []byte {
	return []byte(`{"event":"media","sequence_number":` + seq + `,"stream_id":"32de0dea-53cb-4f21","media":{"track":"inbound","chunk":` + seq +
		`,"timestamp":` + seq + `,"payload":"` + base64.StdEncoding.EncodeToString(payload) + `"}}`)
}

// TestStringNumbersInFrames: sequence_number, chunk and timestamp come as strings on
// Telnyx, but a number is read the same.
func TestStringNumbersInFrames(t *testing.T) {
	want := []byte{0x7f, 0xff, 0x00, 0x12}
	for _, seq := range []string{`"4"`, `4`, `"123456789"`} {
		m, _, err := decodeMedia(nil, mediaFrame(seq, want), false)
		if err != nil || !bytes.Equal(m.audio, want) {
			t.Fatalf("seq %s: decodeMedia = %x, %v", seq, m.audio, err)
		}
		var in inbound
		if err := json.Unmarshal([]byte(seq), &in.SequenceNumber); err != nil || uint64(in.SequenceNumber) != m.seq {
			t.Errorf("seq %s: fast path %d, slow path %d (%v)", seq, m.seq, in.SequenceNumber, err)
		}
	}
	in, err := decodeInbound([]byte(`{"event":"start","sequence_number":"1","start":{"call_control_id":"v3:x","media_format":{"encoding":"PCMU","sample_rate":"8000","channels":1}}}`))
	if err != nil || in.Start.MediaFormat.SampleRate != 8000 || in.Start.MediaFormat.Channels != 1 || in.SequenceNumber != 1 {
		t.Fatalf("start with string numbers: %+v, %v", in, err)
	}
}

// TestPayloadSizesOtherThan160: Telnyx may send 20 ms to seconds of audio per message; every
// size arrives intact, growing the buffer when it must.
func TestPayloadSizesOtherThan160(t *testing.T) {
	buf := make([]byte, 0, 160)
	for _, n := range []int{160, 240, 480, 8000, 161, 1, 640} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i * 7)
		}
		m, grown, err := decodeMedia(buf, mediaFrame(`"9"`, want), false)
		if err != nil || !bytes.Equal(m.audio, want) {
			t.Fatalf("%d bytes: %d back, %v", n, len(m.audio), err)
		}
		buf = grown
	}
	if cap(buf) < 8000 {
		t.Errorf("the buffer did not keep its growth: cap %d", cap(buf))
	}
	huge := []byte(`{"event":"media","media":{"payload":"` + base64.StdEncoding.EncodeToString(make([]byte, maxMediaPayload+3)) + `"}}`)
	if _, _, err := decodeMedia(nil, huge, false); err == nil {
		t.Error("a payload over the bound was accepted")
	}
}

// TestL16ByteOrder pins the one assumption about L16 on Telnyx: the payload is RTP's
// network byte order (big-endian), and Handset's PCM16 is little-endian, both ways.
func TestL16ByteOrder(t *testing.T) {
	sample := int16(0x1234)
	wire := []byte{0x12, 0x34} // big-endian on the wire
	m, _, err := decodeMedia(nil, mediaFrame(`"1"`, wire), true)
	if err != nil {
		t.Fatal(err)
	}
	if got := int16(m.audio[0]) | int16(m.audio[1])<<8; got != sample {
		t.Fatalf("decoded %x as %#x, want %#x", m.audio, got, sample)
	}
	if _, _, err := decodeMedia(nil, mediaFrame(`"1"`, []byte{1, 2, 3}), true); err == nil {
		t.Error("an odd-sized L16 payload was accepted")
	}
	out := wireAudio(nil, []byte{0x34, 0x12}, CodecL16)
	if !bytes.Equal(out, wire) {
		t.Errorf("sent %x for little-endian 0x1234, want %x", out, wire)
	}
	if got := wireAudio(nil, []byte{0x34, 0x12}, CodecPCMU); !bytes.Equal(got, []byte{0x34, 0x12}) {
		t.Errorf("PCMU was byte-swapped: %x", got)
	}
}

func TestDecodeMediaRefuses(t *testing.T) {
	cases := []struct {
		name, msg string
		notMedia  bool
	}{
		{"mark is not media", `{"event":"mark","mark":{"name":"x"}}`, true},
		{"start is not media", `{"event":"start","start":{}}`, true},
		{"bad base64", `{"event":"media","media":{"payload":"@@@"}}`, false},
		{"truncated", `{"event":"media","media":{"payload":"AAA`, false},
		{"not json", `hello`, false},
		{"media without object", `{"event":"media","media":7}`, false},
		{"escaped payload", `{"event":"media","media":{"payload":"AA\u003d\u003d"}}`, false},
		{"bad sequence number", `{"event":"media","sequence_number":"x1","media":{"payload":"AA=="}}`, false},
		{"negative sequence number", `{"event":"media","sequence_number":-1,"media":{"payload":"AA=="}}`, false},
		{"outbound track", `{"event":"media","media":{"track":"outbound","payload":"AA=="}}`, false},
		{"trailing garbage", `{"event":"media","media":{"payload":"AA=="}} x`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := decodeMedia(make([]byte, 0, 64), []byte(c.msg), false)
			if err == nil {
				t.Fatal("accepted")
			}
			if errors.Is(err, errNotMedia) != c.notMedia {
				t.Errorf("err %v, not-media want %v", err, c.notMedia)
			}
		})
	}
}

func TestDecodeInbound(t *testing.T) {
	cases := []struct {
		msg   string
		check func(inbound) bool
	}{
		{`{"event":"connected","version":"1.0.0"}`, func(in inbound) bool { return in.Event == "connected" }},
		{`{"event":"start","sequence_number":"1","stream_id":"s1","start":{"user_id":"u","call_control_id":"v3:a","client_state":"eA==","from":"+1","to":"+2","media_format":{"encoding":"PCMA","sample_rate":8000,"channels":1},"custom_parameters":{}}}`,
			func(in inbound) bool {
				return in.Start.CallControlID == "v3:a" && in.Start.ClientState == "eA==" && in.Start.MediaFormat.Encoding == "PCMA" && in.StreamID == "s1"
			}},
		{`{"event":"dtmf","sequence_number":"5","dtmf":{"digit":"#"}}`, func(in inbound) bool { return in.DTMF.Digit == "#" }},
		{`{"event":"mark","sequence_number":"6","mark":{"name":"t1-s1"}}`, func(in inbound) bool { return in.Mark.Name == "t1-s1" }},
		{`{"event":"error","payload":{"code":100003,"title":"malformed_frame","detail":"x"}}`, func(in inbound) bool { return in.Payload.Code == 100003 && in.Payload.Title == "malformed_frame" }},
		{`{"event":"stop","sequence_number":"9","stop":{"call_control_id":"v3:a"}}`, func(in inbound) bool { return in.Stop.CallControlID == "v3:a" }},
	}
	for _, c := range cases {
		in, err := decodeInbound([]byte(c.msg))
		if err != nil || !c.check(in) {
			t.Errorf("decodeInbound(%s) = %+v, %v", c.msg, in, err)
		}
	}
	for _, bad := range []string{`{}`, `{"event":""}`, `[]`, `{"event":"media","sequence_number":"1.5"}`} {
		if _, err := decodeInbound([]byte(bad)); err == nil {
			t.Errorf("decodeInbound(%s) accepted", bad)
		}
	}
}

func TestOutboundMessagesAreTelnyxJSON(t *testing.T) {
	audio := []byte{1, 2, 3, 250}
	var m struct {
		Event string
		Media struct{ Payload string }
		Mark  struct{ Name string }
	}
	out := appendMedia(nil, audio)
	if err := json.Unmarshal(out, &m); err != nil || m.Event != "media" {
		t.Fatalf("media: %s %v", out, err)
	}
	if p, _ := base64.StdEncoding.DecodeString(m.Media.Payload); !bytes.Equal(p, audio) {
		t.Errorf("payload %x", p)
	}
	if bytes.Contains(out, []byte("stream_id")) {
		t.Errorf("media carries a stream id: %s", out)
	}
	if err := json.Unmarshal(appendMark(nil, `t1-s"2`), &m); err != nil || m.Event != "mark" || m.Mark.Name != `t1-s"2` {
		t.Errorf("mark: %+v %v", m, err)
	}
	if got := string(appendClear(nil)); got != `{"event":"clear"}` {
		t.Errorf("clear: %s", got)
	}
}

func TestMediaPathAllocatesNothing(t *testing.T) {
	frame := mediaFrame(`"42"`, make([]byte, 160))
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(200, func() {
		m, _, err := decodeMedia(buf, frame, false)
		if err != nil || len(m.audio) != 160 {
			panic(fmt.Sprint(err))
		}
	}); n != 0 {
		t.Errorf("decodeMedia allocates %.1f times per frame", n)
	}
	out := make([]byte, 0, 4096)
	audio := make([]byte, 320)
	if n := testing.AllocsPerRun(200, func() {
		out = appendMedia(out[:0], wireAudio(out[:0:0], audio, CodecPCMU))
	}); n != 0 {
		t.Errorf("appendMedia allocates %.1f times per frame", n)
	}
}

func BenchmarkDecodeMedia(b *testing.B) {
	frame := mediaFrame(`"42"`, make([]byte, 160))
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decodeMedia(buf, frame, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMedia(b *testing.B) {
	out := make([]byte, 0, 4096)
	audio := make([]byte, 160)
	b.ReportAllocs()
	for b.Loop() {
		out = appendMedia(out[:0], audio)
	}
}

// FuzzDecodeMedia checks the fast media path against encoding/json on any input: whatever
// the fast path accepts, the slow path reads the same way.
func FuzzDecodeMedia(f *testing.F) {
	f.Add(mediaFrame(`"4"`, []byte{1, 2, 3}))
	f.Add(mediaFrame(`4`, []byte{1, 2}))
	f.Add([]byte(`{"event":"mark","mark":{"name":"t1-s1"}}`))
	f.Add([]byte(`{"event":"start","start":{"call_control_id":"v3:a","media_format":{"encoding":"PCMU","sample_rate":"8000"}}}`))
	f.Add([]byte(`{"event":"media","media":{"payload":"AA\u003d\u003d"}}`))
	f.Add([]byte(`{"event":"media","sequence_number":null,"media":{"payload":""}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, _, err := decodeMedia(make([]byte, 0, 64), msg, false)
		if err != nil {
			return
		}
		in, jerr := decodeInbound(msg)
		if jerr != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", jerr, msg)
		}
		if in.Event != "media" || uint64(in.SequenceNumber) != m.seq || uint64(in.Media.Chunk) != m.chunk {
			t.Fatalf("fast path read event media seq %d chunk %d; slow path %q seq %d chunk %d", m.seq, m.chunk, in.Event, in.SequenceNumber, in.Media.Chunk)
		}
		want, berr := base64.StdEncoding.DecodeString(in.Media.Payload)
		if berr != nil || !bytes.Equal(want, m.audio) {
			t.Fatalf("fast path payload %x, slow path %x (%v)", m.audio, want, berr)
		}
	})
}
