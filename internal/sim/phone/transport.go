package phone

import (
	"bytes"
	"context"

	"github.com/coder/websocket"
)

// Transport carries one call's messages between the simulated caller and Handset. A
// carrier with a media-stream protocol uses a WebSocket (Run wraps it); a SIP trunk's
// caller sends RTP datagrams, which have no marks, clears or stop message: its Wire says
// so (Info.AudioOnly) and its Transport ends the call by signalling (a BYE).
//
// The call's reader is the only caller of Read and its writer the only caller of Write;
// Close and CloseNow may come from either, or from a watchdog.
type Transport interface {
	// Read returns the next message from Handset. data is valid until the next Read. An
	// end of the call that Handset chose is a websocket.CloseError (a SIP trunk's caller
	// reports Handset's BYE as a normal closure); any other error is a lost call.
	Read(ctx context.Context) (typ websocket.MessageType, data []byte, err error)
	// Write sends one message; it must not keep msg.
	Write(ctx context.Context, msg []byte) error
	// Close ends the call as the caller hanging up (a WebSocket close handshake, a BYE)
	// and releases the transport.
	Close() error
	// CloseNow drops the transport at once: a pending Read or Write fails.
	CloseNow() error
}

// wsTransport is a WebSocket media stream as a Transport: text frames out, and every
// message read into one reused buffer.
type wsTransport struct {
	conn *websocket.Conn
	rbuf bytes.Buffer // the message being read; owned by the reader, reused
}

func (t *wsTransport) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	typ, r, err := t.conn.Reader(ctx)
	if err != nil {
		return 0, nil, err
	}
	if t.rbuf.Cap() > maxKeptReadBuf { // a rare large message is read, then its buffer goes
		t.rbuf = bytes.Buffer{}
	}
	t.rbuf.Reset()
	_, err = t.rbuf.ReadFrom(r)
	return typ, t.rbuf.Bytes(), err
}

func (t *wsTransport) Write(ctx context.Context, msg []byte) error {
	return t.conn.Write(ctx, websocket.MessageText, msg)
}

func (t *wsTransport) Close() error { return t.conn.Close(websocket.StatusNormalClosure, "") }

func (t *wsTransport) CloseNow() error { return t.conn.CloseNow() }
