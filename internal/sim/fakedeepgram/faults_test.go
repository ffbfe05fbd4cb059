package fakedeepgram_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
)

// An outage refuses handshakes with the status and Deepgram's error body, until it ends.
func TestRefuse(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{})
	ctx := testContext(t)
	live := dial(ctx, t, base, telephoneQuery, "")
	fake.Refuse(http.StatusServiceUnavailable)
	_, resp, err := dialRaw(ctx, base, telephoneQuery, "")
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("err=%v resp=%v, want HTTP 503", err, resp)
	}
	var body struct {
		ErrCode   string `json:"err_code"`
		ErrMsg    string `json:"err_msg"`
		RequestID string `json:"request_id"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if json.Unmarshal(raw, &body) != nil || body.ErrCode != "SERVICE_UNAVAILABLE" || body.RequestID == "" {
		t.Errorf("503 body %s", raw)
	}
	// The open connection is untouched; the outage ends with Refuse(0).
	sendJSON(ctx, t, live, "KeepAlive")
	fake.Refuse(0)
	c := dial(ctx, t, base, telephoneQuery, "")
	_ = c.Close(websocket.StatusNormalClosure, "")
	_ = live.Close(websocket.StatusNormalClosure, "")
	if fake.Rejected() != 1 || fake.Connections() != 2 {
		t.Errorf("rejected %d, connections %d; want 1 and 2", fake.Rejected(), fake.Connections())
	}
}

// A stalled server answers no handshake until released; a client that gives up is gone.
func TestStall(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{})
	ctx := testContext(t)
	fake.Stall(true)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, _, err := dialRaw(short, base, telephoneQuery, "")
	cancel()
	if err == nil {
		t.Fatal("a stalled handshake succeeded")
	}
	done := make(chan *websocket.Conn, 1)
	go func() {
		c, _, err := dialRaw(ctx, base, telephoneQuery, "")
		if err != nil {
			t.Error(err)
		}
		done <- c
	}()
	for fake.Totals().Stalled < 2 { // the second handshake is being held
		select {
		case <-ctx.Done():
			t.Fatal("the second handshake never arrived")
		case <-time.After(time.Millisecond):
		}
	}
	fake.Stall(false)
	c := <-done
	if c != nil {
		_ = c.Close(websocket.StatusNormalClosure, "")
	}
	if fake.Connections() != 1 {
		t.Errorf("connections %d, want the released one", fake.Connections())
	}
}

// DropAll ends live sockets without a close frame.
func TestDropAll(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{})
	ctx := testContext(t)
	c := dial(ctx, t, base, telephoneQuery, "")
	fake.DropAll()
	_, _, err := c.Read(ctx)
	if err == nil || websocket.CloseStatus(err) != -1 {
		t.Fatalf("read %v, want an abrupt end without a close frame", err)
	}
	if err := fake.WaitFor(ctx, func(s []fakedeepgram.ConnStats) bool { return s[0].Closed }); err != nil {
		t.Fatal(err)
	}
	if st := fake.Stats()[0]; !st.Dropped || fake.Totals().Dropped != 1 {
		t.Errorf("stats %+v, totals %+v", st, fake.Totals())
	}
}
