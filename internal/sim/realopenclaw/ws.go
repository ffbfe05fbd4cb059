package realopenclaw

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// WSConn is a minimal RFC 6455 client (text frames, no extensions) that is enough to speak
// the OpenClaw gateway protocol from tests without third-party modules. Reads must come
// from one goroutine; writes are serialised.
type WSConn struct {
	conn net.Conn
	br   *bufio.Reader
	wmu  sync.Mutex
	seq  int
}

// CloseError is returned by ReadMessage when the server closed the socket.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string { return fmt.Sprintf("websocket closed: %d %q", e.Code, e.Reason) }

// DialWS opens a WebSocket to a ws:// URL.
func DialWS(ctx context.Context, rawURL string) (*WSConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "ws" {
		return nil, fmt.Errorf("DialWS: only ws:// is supported, got %q", rawURL)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	keyRaw := make([]byte, 16)
	_, _ = rand.Read(keyRaw)
	key := base64.StdEncoding.EncodeToString(keyRaw)
	path := u.RequestURI()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		conn.Close()
		return nil, fmt.Errorf("DialWS: %s", resp.Status)
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		conn.Close()
		return nil, errors.New("DialWS: bad Sec-WebSocket-Accept")
	}
	_ = conn.SetDeadline(time.Time{})
	return &WSConn{conn: conn, br: br}, nil
}

// Close closes the connection (with a close frame, best effort).
func (c *WSConn) Close() error {
	_ = c.writeFrame(0x8, []byte{0x03, 0xe8}) // 1000
	return c.conn.Close()
}

// WriteJSON sends v as one text frame.
func (c *WSConn) WriteJSON(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.writeFrame(0x1, data)
}

func (c *WSConn) writeFrame(op byte, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	hdr := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, 0x80|126, byte(n>>8), byte(n))
	default:
		hdr = binary.BigEndian.AppendUint64(append(hdr, 0x80|127), uint64(n))
	}
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	masked := make([]byte, len(payload))
	for i, b := range payload {
		masked[i] = b ^ mask[i%4]
	}
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.conn.Write(append(hdr, masked...))
	return err
}

// ReadMessage returns the next text (or binary) message, answering pings on the way. It
// gives up when ctx ends; the connection is then unusable.
func (c *WSConn) ReadMessage(ctx context.Context) ([]byte, error) {
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var msg []byte
	for {
		fin, op, payload, err := c.readFrame()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		switch op {
		case 0x9: // ping
			if err := c.writeFrame(0xA, payload); err != nil {
				return nil, err
			}
			continue
		case 0xA:
			continue
		case 0x8:
			ce := &CloseError{Code: 1005}
			if len(payload) >= 2 {
				ce.Code = int(binary.BigEndian.Uint16(payload))
				ce.Reason = string(payload[2:])
			}
			_ = c.writeFrame(0x8, payload[:min(2, len(payload))])
			return nil, ce
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

func (c *WSConn) readFrame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(c.br, h[:]); err != nil {
		return
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err = io.ReadFull(c.br, b[:]); err != nil {
			return
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err = io.ReadFull(c.br, b[:]); err != nil {
			return
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 64<<20 {
		return false, 0, nil, fmt.Errorf("websocket frame too large: %d", n)
	}
	var mask []byte
	if h[1]&0x80 != 0 {
		mask = make([]byte, 4)
		if _, err = io.ReadFull(c.br, mask); err != nil {
			return
		}
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(c.br, payload); err != nil {
		return
	}
	if mask != nil {
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
	}
	return
}

// Frame is one gateway protocol frame (req, res or event), as received.
type Frame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	OK      bool            `json:"ok,omitempty"`
	Event   string          `json:"event,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
	Seq     *int            `json:"seq,omitempty"`
	Raw     []byte          `json:"-"`
}

// ReadFrame reads and decodes the next frame.
func (c *WSConn) ReadFrame(ctx context.Context) (Frame, error) {
	data, err := c.ReadMessage(ctx)
	if err != nil {
		return Frame{}, err
	}
	var f Frame
	if err := json.Unmarshal(data, &f); err != nil {
		return Frame{}, fmt.Errorf("bad frame %q: %w", data, err)
	}
	f.Raw = data
	return f, nil
}

// Request sends {"type":"req"} with a fresh id and returns that id.
func (c *WSConn) Request(method string, params any) (string, error) {
	c.wmu.Lock()
	c.seq++
	id := fmt.Sprintf("hs-%d", c.seq)
	c.wmu.Unlock()
	return id, c.WriteJSON(map[string]any{"type": "req", "id": id, "method": method, "params": params})
}

// ConnectParams are the connect params Handshake sends: a trusted backend on loopback with
// the shared token, protocol 4, operator read+write.
func ConnectParams(token string) map[string]any {
	return map[string]any{
		"minProtocol": 4, "maxProtocol": 4,
		"client": map[string]any{"id": "gateway-client", "version": "0.0.1", "platform": "linux", "mode": "backend"},
		"role":   "operator", "scopes": []string{"operator.read", "operator.write"}, "caps": []string{},
		"auth": map[string]any{"token": token}, "locale": "en-US", "userAgent": "handset-test/0.0.1",
	}
}

// Handshake waits for connect.challenge, sends connect with token and returns the frames
// (challenge, then the hello-ok response). A non-ok response is an error carrying it.
func (c *WSConn) Handshake(ctx context.Context, token string) ([]Frame, error) {
	ch, err := c.ReadFrame(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting for connect.challenge: %w", err)
	}
	if ch.Type != "event" || ch.Event != "connect.challenge" {
		return nil, fmt.Errorf("first frame is not connect.challenge: %s", ch.Raw)
	}
	id, err := c.Request("connect", ConnectParams(token))
	if err != nil {
		return nil, err
	}
	for {
		f, err := c.ReadFrame(ctx)
		if err != nil {
			return nil, fmt.Errorf("waiting for hello-ok: %w", err)
		}
		if f.Type != "res" || f.ID != id {
			continue
		}
		if !f.OK {
			return nil, fmt.Errorf("connect refused: %s", f.Raw)
		}
		if !strings.Contains(string(f.Payload), `"hello-ok"`) {
			return nil, fmt.Errorf("connect answered without hello-ok: %.300s", f.Raw)
		}
		return []Frame{ch, f}, nil
	}
}

// HistoryMessage is one message of a session's transcript as the gateway keeps it.
type HistoryMessage struct {
	Role string
	Text string // its text: the string content, or its text parts joined
}

// History reads a session's transcript back from the gateway (chat.history), up to limit
// messages, on a connection that has made its handshake.
func (c *WSConn) History(ctx context.Context, sessionKey string, limit int) ([]HistoryMessage, error) {
	id, err := c.Request("chat.history", map[string]any{"sessionKey": sessionKey, "limit": limit})
	if err != nil {
		return nil, err
	}
	for {
		f, err := c.ReadFrame(ctx)
		if err != nil {
			return nil, err
		}
		if f.Type != "res" || f.ID != id {
			continue // events of runs going on
		}
		if !f.OK {
			return nil, fmt.Errorf("chat.history refused: %s", f.Raw)
		}
		var payload struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(f.Payload, &payload); err != nil {
			return nil, fmt.Errorf("chat.history: %w: %.500s", err, f.Payload)
		}
		out := make([]HistoryMessage, 0, len(payload.Messages))
		for _, m := range payload.Messages {
			out = append(out, HistoryMessage{Role: m.Role, Text: contentText(m.Content)})
		}
		return out, nil
	}
}

// contentText is a message's text: a string, or its text parts joined.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Type, Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
