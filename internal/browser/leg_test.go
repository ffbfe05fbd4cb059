package browser

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/voice"
)

// nopSink takes what a leg reads and ignores it.
type nopSink struct{}

func (nopSink) Audio([]byte)    {}
func (nopSink) Mark(string)     {}
func (nopSink) DTMF(string)     {}
func (nopSink) Malformed(error) {}

// TestReadyComesBeforeAnyAudio: the call may send its greeting before the leg's Run has
// announced it (the playout starts on its own goroutine); the page still gets "ready"
// first, then the audio.
func TestReadyComesBeforeAnyAudio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	legs := make(chan *Leg, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		legs <- newLeg(conn, voice.LegInfo{CallID: "call-1", Format: Format})
		<-ctx.Done()
	}))
	defer srv.Close()
	client, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseNow()
	leg := <-legs
	sent := make(chan error, 1)
	go func() { sent <- leg.SendAudio(ctx, make([]byte, Format.FrameBytes())) }()
	select {
	case err := <-sent:
		t.Fatalf("audio went out before the call was announced (err %v)", err)
	case <-time.After(50 * time.Millisecond): // it waits, however long Run takes to start
	}
	go func() { _ = leg.Run(ctx, nopSink{}) }()
	typ, msg, err := client.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ready struct{ Type string }
	if typ != websocket.MessageText || json.Unmarshal(msg, &ready) != nil || ready.Type != "ready" {
		t.Fatalf("first message %v %q, want ready", typ, msg)
	}
	if typ, _, err = client.Read(ctx); err != nil || typ != websocket.MessageBinary {
		t.Fatalf("second message %v (%v), want the audio", typ, err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}
