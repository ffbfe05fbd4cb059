package twiliocaller

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWriteTimeoutDropsTheCall: a Handset that stops reading loses the call once one
// write has waited writeTimeout, as a real Twilio stream would be lost.
func TestWriteTimeoutDropsTheCall(t *testing.T) {
	old := writeTimeout
	writeTimeout = 200 * time.Millisecond
	t.Cleanup(func() { writeTimeout = old })

	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		<-release // accept the stream, then never read it
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	tw := StreamTwiML{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/stream", Parameters: map[string]string{}}
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	c, err := Connect(ctx, Options{InsecureStreamURL: true, HTTPClient: srv.Client()}, tw)
	if err != nil {
		t.Fatal(err)
	}
	// More than the socket buffers hold, so the write blocks on the silent peer.
	if err := c.SendRaw(strings.Repeat("x", 64<<20)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		cancel() // unblocks the write, so the test can end
		<-c.Done()
		t.Fatal("the call outlived a write blocked far past writeTimeout")
	}
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err = %v, want a write timeout", err)
	}
}
