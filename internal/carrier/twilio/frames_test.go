package twilio

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func mediaMsg(payload []byte) []byte {
	return []byte(`{"event":"media","sequenceNumber":"3","streamSid":"MZ1","media":{"track":"inbound","chunk":"1","timestamp":"5","payload":"` +
		base64.StdEncoding.EncodeToString(payload) + `"}}`)
}

func TestDecodeMedia(t *testing.T) {
	want := bytes.Repeat([]byte{0x7f, 0xff, 0x00}, 53)
	got, err := decodeMedia(make([]byte, 0, 1024), mediaMsg(want))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("decodeMedia = %x, %v", got, err)
	}
	bad := []struct {
		name, msg string
		notMedia  bool
	}{
		{"mark is not media", `{"event":"mark","streamSid":"MZ1","mark":{"name":"x"}}`, true},
		{"bad base64", `{"event":"media","media":{"payload":"@@@"}}`, false},
		{"truncated", `{"event":"media","media":{"payload":"AAA`, false},
		{"not json", `hello`, false},
		{"media without object", `{"event":"media","media":7}`, false},
		{"trailing garbage", `{"event":"media","media":{"payload":"AA=="}} x`, false},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeMedia(make([]byte, 0, 1024), []byte(tt.msg))
			if err == nil {
				t.Fatal("accepted")
			}
			if (err == errNotMedia) != tt.notMedia {
				t.Errorf("err %v, notMedia want %v", err, tt.notMedia)
			}
		})
	}
}

func TestOutboundMessagesAreTwilioJSON(t *testing.T) {
	audio := []byte{1, 2, 3, 250}
	var m struct {
		Event     string
		StreamSid string
		Media     struct{ Payload string }
		Mark      struct{ Name string }
	}
	if err := json.Unmarshal(appendMedia(nil, "MZ1", audio), &m); err != nil || m.Event != "media" || m.StreamSid != "MZ1" {
		t.Fatalf("media: %+v %v", m, err)
	}
	if p, _ := base64.StdEncoding.DecodeString(m.Media.Payload); !bytes.Equal(p, audio) {
		t.Errorf("payload %x", p)
	}
	if err := json.Unmarshal(appendMark(nil, "MZ1", `t1-s"2`), &m); err != nil || m.Mark.Name != `t1-s"2` {
		t.Errorf("mark: %+v %v", m, err)
	}
	if err := json.Unmarshal(appendClear(nil, "MZ1"), &m); err != nil || m.Event != "clear" {
		t.Errorf("clear: %+v %v", m, err)
	}
}

// FuzzDecodeInbound checks the fast media path against encoding/json on any input.
func FuzzDecodeInbound(f *testing.F) {
	f.Add(mediaMsg([]byte{1, 2, 3}))
	f.Add([]byte(`{"event":"mark","streamSid":"MZ1","mark":{"name":"t1-s1"}}`))
	f.Add([]byte(`{"event":"start","start":{"callSid":"CA1","customParameters":{"handset_token":"a.b"}}}`))
	f.Add([]byte(`{"event":"media","media":{"payload":"AA\u003d\u003d"}}`))
	f.Add([]byte(`{"event":"dtmf","dtmf":{"digit":"5"}}`))
	f.Add([]byte(`{"media":{"payload":"AAAA"},"event":"media"}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		got, err := decodeMedia(make([]byte, 0, 8192), msg)
		if err != nil {
			_, _ = decodeInbound(msg)
			return
		}
		in, jerr := decodeInbound(msg)
		if jerr != nil {
			t.Fatalf("fast path accepted what encoding/json rejects: %q (%v)", msg, jerr)
		}
		want, derr := base64.StdEncoding.DecodeString(in.Media.Payload)
		if in.Event != "media" || derr != nil || !bytes.Equal(got, want) {
			t.Fatalf("fast path %x, json path event %q payload %x (%v)", got, in.Event, want, derr)
		}
	})
}

func BenchmarkDecodeMedia(b *testing.B) {
	msg := mediaMsg(bytes.Repeat([]byte{0x55}, 160))
	dst := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(160)
	for b.Loop() {
		if _, err := decodeMedia(dst, msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMedia(b *testing.B) {
	audio := bytes.Repeat([]byte{0x55}, 160)
	out := make([]byte, 0, 512)
	b.ReportAllocs()
	b.SetBytes(160)
	for b.Loop() {
		out = appendMedia(out[:0], "MZ0123456789abcdef0123456789abcdef", audio)
	}
}

// The per-frame paths allocate nothing: reading a media message and writing one.
func TestMediaFramesAllocateNothing(t *testing.T) {
	msg := mediaMsg(bytes.Repeat([]byte{0x55}, 160))
	dst := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := decodeMedia(dst, msg); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("decodeMedia allocates %v times per frame", n)
	}
	audio := bytes.Repeat([]byte{0x55}, 160)
	out := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(200, func() {
		out = appendMedia(out[:0], "MZ0123456789abcdef0123456789abcdef", audio)
		out = appendMark(out[:0], "MZ0123456789abcdef0123456789abcdef", "t12-s3")
	}); n != 0 {
		t.Errorf("appendMedia and appendMark allocate %v times per frame", n)
	}
}

// A message nested a million deep is refused at once, not recursed into.
func TestDeepNestingIsRefused(t *testing.T) {
	msg := []byte(`{"event":"media","x":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `}`)
	if _, err := decodeMedia(make([]byte, 0, 4096), msg); err == nil {
		t.Fatal("a message nested a million deep was accepted")
	}
	ok := []byte(`{"event":"media","x":[[{"a":[1,{"b":null}]}]],"media":{"payload":"AAAA"}}`)
	if got, err := decodeMedia(make([]byte, 0, 4096), ok); err != nil || len(got) != 3 {
		t.Errorf("a shallow nested member: %v %v", got, err)
	}
}

// A start message, read before the stream's token is checked, cannot make a huge error
// (logged, and sent as the close reason) with a huge media format.
func TestReadStartBoundsAnUnsupportedFormat(t *testing.T) {
	errs := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			errs <- err
			return
		}
		conn.SetReadLimit(1 << 20)
		_, err = readStart(r.Context(), conn)
		errs <- err
		conn.CloseNow()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	start := `{"event":"start","start":{"streamSid":"MZ1","mediaFormat":{"encoding":"` + strings.Repeat("é", 50_000) + `","sampleRate":8000}}}`
	if err := conn.Write(ctx, websocket.MessageText, []byte(start)); err != nil {
		t.Fatal(err)
	}
	err = <-errs
	if err == nil || !strings.HasPrefix(err.Error(), "unsupported media format éé") || len(err.Error()) > 100 {
		t.Errorf("readStart: %.120v (%d bytes)", err, len(fmt.Sprint(err)))
	}
}
