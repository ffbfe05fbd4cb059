package hermes_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/voice"
)

// A reply that ended properly leaves its connection for the next turn: its stream's last
// event comes before the end of the HTTP body, and closing the body there would close the
// connection, so that every turn dialled Hermes again.
func TestFinishedRepliesKeepTheirConnection(t *testing.T) {
	for _, transport := range []string{hermes.TransportChat, hermes.TransportRuns} {
		t.Run(transport, func(t *testing.T) {
			fake := fakehermes.New(fakehermes.Options{Key: testKey})
			ts := httptest.NewUnstartedServer(fake)
			var dials atomic.Int64
			ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					dials.Add(1)
				}
			}
			ts.Start()
			defer func() { fake.Close(); ts.Close() }()
			a, err := hermes.New(hermes.Options{BaseURL: ts.URL + "/v1", Key: testKey, Transport: transport})
			if err != nil {
				t.Fatal(err)
			}
			const turns = 20
			for i := range turns {
				s, err := a.Reply(context.Background(), voice.TurnRequest{CallID: "c1", Turn: i + 1,
					History: []voice.Message{{Role: voice.RoleUser, Content: "Hello"}}})
				if err != nil {
					t.Fatal(err)
				}
				for {
					if _, err := s.Next(); errors.Is(err, io.EOF) {
						break
					} else if err != nil {
						t.Fatal(err)
					}
				}
				_ = s.Close()
				// turns come seconds apart: time for the end of the body to be read
				time.Sleep(50 * time.Millisecond)
			}
			// the runs transport has two requests a turn, which may overlap once
			if n := dials.Load(); n > 2 {
				t.Errorf("%d connections for %d turns, want them kept", n, turns)
			}
		})
	}
}
