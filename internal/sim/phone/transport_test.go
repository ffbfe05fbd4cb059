package phone

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// memTransport is a Transport in memory: what Handset sends is queued on in, what the
// phone writes arrives on out; hangUp is Handset ending the call.
type memTransport struct {
	in, out chan []byte
	gone    chan struct{} // closed by CloseNow or Close
	hungUp  chan struct{} // closed by hangUp
	once    sync.Once
	mu      sync.Mutex
	closed  bool // Close (the caller's hang-up) was called
}

func newMemTransport() *memTransport {
	return &memTransport{in: make(chan []byte, 64), out: make(chan []byte, 4096), gone: make(chan struct{}), hungUp: make(chan struct{})}
}

func (m *memTransport) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	select {
	case b := <-m.in:
		return websocket.MessageBinary, b, nil
	case <-m.hungUp:
		return 0, nil, websocket.CloseError{Code: websocket.StatusNormalClosure, Reason: "BYE"}
	case <-m.gone:
		return 0, nil, errors.New("transport dropped")
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
}

func (m *memTransport) Write(_ context.Context, msg []byte) error {
	select {
	case <-m.gone:
		return errors.New("transport dropped")
	default:
	}
	select {
	case m.out <- append([]byte(nil), msg...):
	default: // a test that stopped reading loses media, as a network would
	}
	return nil
}

func (m *memTransport) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return m.CloseNow()
}

func (m *memTransport) CloseNow() error {
	m.once.Do(func() { close(m.gone) })
	return nil
}

func audioOnlyWire() *plainWire {
	w := telephoneWire()
	w.info.AudioOnly = true
	return w
}

// A call on a transport other than a WebSocket: media flows both ways, and Handset ending
// the call (a close the transport reports as normal) ends it cleanly, as Handset's choice.
func TestRunTransportEndedByHandset(t *testing.T) {
	tr := newMemTransport()
	c, err := RunTransport(testCtx(t), tr, audioOnlyWire(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hello", "media:"} { // the handshake, then paced media
		select {
		case m := <-tr.out:
			if !strings.HasPrefix(string(m), want) || (want == "media:" && len(m) != len(want)+pieceBytes) {
				t.Fatalf("message %q, want %q", m, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the phone sent no %q", want)
		}
	}
	tr.in <- tone(20*ms, 0.5)
	if err := c.WaitFor(testCtx(t), func(s Snapshot) bool { return s.Counters.ReceivedFrames == 1 }); err != nil {
		t.Fatal(err)
	}
	close(tr.hungUp)
	<-c.Done()
	if e, _ := c.Ending(); !e.ByHandset || e.Err != nil || e.Code != websocket.StatusNormalClosure {
		t.Fatalf("ending %+v, want Handset's clean close", e)
	}
}

// The caller hanging up closes the transport (its BYE), not merely drops it.
func TestRunTransportHangupClosesTheTransport(t *testing.T) {
	tr := newMemTransport()
	c, err := RunTransport(testCtx(t), tr, audioOnlyWire(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	closed := tr.closed
	tr.mu.Unlock()
	if e, _ := c.Ending(); !closed || e.ByHandset || e.Err != nil {
		t.Fatalf("closed %t, ending %+v: want the transport closed by a clean hang-up", closed, e)
	}
}
