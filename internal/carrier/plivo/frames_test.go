package plivo_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/handset-voice/handset/internal/carrier/plivo"
)

func mediaMessage(payload []byte, chunk string) []byte {
	return fmt.Appendf(nil, `{"event":"media","sequenceNumber":7,"streamId":"s-1","media":{"track":"inbound","timestamp":"1234","chunk":%s,"payload":"%s"}}`,
		chunk, base64.StdEncoding.EncodeToString(payload))
}

func TestDecodeMedia(t *testing.T) {
	audio := bytes.Repeat([]byte{0xff, 0x7f, 0x00}, 60)
	for _, chunk := range []string{`5`, `"5"`} {
		m, err := plivo.DecodeMedia(make([]byte, 0, 1024), mediaMessage(audio, chunk))
		if err != nil || !bytes.Equal(m.Payload, audio) || !m.HasChunk || m.Chunk != 5 {
			t.Errorf("chunk %s: %+v, %v", chunk, m, err)
		}
	}
	if _, err := plivo.DecodeMedia(nil, []byte(`{"event":"start","start":{}}`)); !errors.Is(err, plivo.ErrNotMedia) {
		t.Errorf("start: %v", err)
	}
	for name, msg := range map[string]string{
		"no media object": `{"event":"media","media":"x"}`,
		"negative chunk":  `{"event":"media","media":{"chunk":-1,"payload":"AAAA"}}`,
		"bad base64":      `{"event":"media","media":{"payload":"A*AA"}}`,
		"escaped payload": `{"event":"media","media":{"payload":"AA\u0041A"}}`,
		"not JSON":        `{"event":"media",`,
		"too large":       `{"event":"media","media":{"payload":"` + base64.StdEncoding.EncodeToString(make([]byte, 2048)) + `"}}`,
	} {
		if _, err := plivo.DecodeMedia(make([]byte, 0, 1024), []byte(msg)); err == nil || errors.Is(err, plivo.ErrNotMedia) {
			t.Errorf("%s: %v, want an error", name, err)
		}
	}
}

func TestDecodeFrame(t *testing.T) {
	start, err := plivo.DecodeFrame([]byte(`{"event":"start","sequenceNumber":1,"start":{"callId":"c-1","streamId":"s-1","accountId":"MA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000}},"extra_headers":"handsettoken=abc;other=1"}`))
	if err != nil || start.Event != plivo.EventStart || start.SequenceNumber != 1 || start.Start.CallID != "c-1" ||
		start.Start.StreamID != "s-1" || start.Start.MediaFormat.SampleRate != 8000 {
		t.Fatalf("start: %+v, %v", start, err)
	}
	if h := plivo.ParseExtraHeaders(start.ExtraHeaders); h["handsettoken"] != "abc" || h["other"] != "1" {
		t.Errorf("extra headers %v", h)
	}
	if h := plivo.ParseExtraHeaders("handsettoken=abc,bad-key=1, x=2"); len(h) != 2 || h["x"] != "2" {
		t.Errorf("comma-separated: %v", h)
	}
	for _, msg := range []string{
		`{"event":"playedStream","sequenceNumber":"9","streamId":"s-1","name":"t1-s1"}`,
		`{"event":"played","streamId":"s-1","name":"t1-s1"}`,
	} {
		f, err := plivo.DecodeFrame([]byte(msg))
		if err != nil || f.Name != "t1-s1" || f.StreamID != "s-1" {
			t.Errorf("%s: %+v, %v", msg, f, err)
		}
	}
	if f, err := plivo.DecodeFrame([]byte(`{"event":"dtmf","dtmf":{"digit":"5"}}`)); err != nil || f.DTMF.Digit != "5" {
		t.Errorf("dtmf: %+v, %v", f, err)
	}
	for _, msg := range []string{`{}`, `{"event":"start","sequenceNumber":-1}`, `[1]`} {
		if _, err := plivo.DecodeFrame([]byte(msg)); err == nil {
			t.Errorf("%s: accepted", msg)
		}
	}
}

func TestWriter(t *testing.T) {
	w, err := plivo.NewWriter("s-\"1", plivo.ContentL16_16k)
	if err != nil {
		t.Fatal(err)
	}
	var play struct {
		Event string
		Media struct {
			ContentType string
			SampleRate  int
			Payload     []byte
		}
	}
	audio := []byte{1, 2, 3, 4}
	if err := json.Unmarshal(w.AppendPlayAudio(nil, audio), &play); err != nil || play.Event != "playAudio" ||
		play.Media.ContentType != "audio/x-l16" || play.Media.SampleRate != 16000 || !bytes.Equal(play.Media.Payload, audio) {
		t.Errorf("playAudio: %+v, %v", play, err)
	}
	var cp struct{ Event, StreamID, Name string }
	if err := json.Unmarshal(w.AppendCheckpoint(nil, "t1-s1"), &cp); err != nil || cp.Event != "checkpoint" || cp.StreamID != "s-\"1" || cp.Name != "t1-s1" {
		t.Errorf("checkpoint: %+v, %v", cp, err)
	}
	if err := json.Unmarshal(w.AppendClearAudio(nil), &cp); err != nil || cp.Event != "clearAudio" || cp.StreamID != "s-\"1" {
		t.Errorf("clearAudio: %+v, %v", cp, err)
	}
	for _, ct := range []string{"", "audio/x-mulaw", "audio/x-alaw;rate=8000", "audio/x-mulaw;rate=16000"} {
		if _, err := plivo.NewWriter("s", ct); err == nil {
			t.Errorf("%q accepted", ct)
		}
	}
}

// TestMediaPathsAllocateNothing: reading and writing a media frame allocates nothing.
func TestMediaPathsAllocateNothing(t *testing.T) {
	msg := mediaMessage(make([]byte, 160), "12")
	dst := make([]byte, 0, 1024)
	w, err := plivo.NewWriter("s-1", plivo.ContentMulaw8k)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 0, 1024)
	audio := make([]byte, 160)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := plivo.DecodeMedia(dst, msg); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("DecodeMedia: %v allocations per frame", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		out = w.AppendPlayAudio(out[:0], audio)
		out = w.AppendCheckpoint(out[:0], "t1-s1")
	}); n != 0 {
		t.Errorf("AppendPlayAudio and AppendCheckpoint: %v allocations per frame", n)
	}
}

// FuzzDecodeMedia: whatever the fast path accepts, encoding/json reads alike.
func FuzzDecodeMedia(f *testing.F) {
	f.Add(mediaMessage([]byte{1, 2, 3}, "1"))
	f.Add(mediaMessage(nil, `"2"`))
	f.Add([]byte(`{"event":"media","media":{"payload":"AAAA","chunk":3}}`))
	f.Add([]byte(`{"event":"start","start":{"callId":"x"}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := plivo.DecodeMedia(make([]byte, 0, 4096), msg)
		if err != nil {
			return
		}
		var slow struct {
			Event string `json:"event"`
			Media struct {
				Payload string `json:"payload"`
			} `json:"media"`
		}
		if err := json.Unmarshal(msg, &slow); err != nil {
			t.Fatalf("the fast path accepted what encoding/json refuses: %v", err)
		}
		want, err := base64.StdEncoding.DecodeString(slow.Media.Payload)
		if err != nil || slow.Event != "media" || !bytes.Equal(want, m.Payload) {
			t.Fatalf("fast path %x, slow path %x (%v)", m.Payload, want, err)
		}
	})
}

func BenchmarkDecodeMedia(b *testing.B) {
	msg := mediaMessage(make([]byte, 160), "12")
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := plivo.DecodeMedia(dst, msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMedia(b *testing.B) {
	w, _ := plivo.NewWriter("s-1", plivo.ContentMulaw8k)
	out, audio := make([]byte, 0, 1024), make([]byte, 160)
	b.ReportAllocs()
	for b.Loop() {
		out = w.AppendPlayAudio(out[:0], audio)
	}
}
