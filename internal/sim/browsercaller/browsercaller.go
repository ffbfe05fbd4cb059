// Package browsercaller is a simulated browser caller: it speaks the call page's socket
// protocol (internal/browser) the way the page does, without a browser. It streams PCM at
// real-time pace, "plays" the agent's audio on a real-time clock and echoes marks when that
// audio would have finished playing (at once on a clear), and keeps the journal events the
// server forwards. Tests and bench use it; the real page is tested with Chromium.
package browsercaller

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// rate is the page's audio format: 16-bit PCM at 16 kHz.
const rate = 16000

// Event is a journal event as the page receives it.
type Event struct {
	Type   string `json:"type"`
	Turn   int    `json:"turn"`
	Text   string `json:"text"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// Call is one browser call.
type Call struct {
	conn *websocket.Conn
	id   string

	mu       sync.Mutex // guards following
	events   []Event
	changed  chan struct{} // closed and replaced whenever events or audio change
	audio    []byte        // agent audio received
	playEnd  time.Time     // when the audio received so far finishes playing
	marks    []*time.Timer // pending mark echoes
	clears   int
	ended    bool
	endCause error

	done chan struct{}
}

// NewJar returns a cookie jar: pass the same jar to Dial for the same "browser".
func NewJar() http.CookieJar {
	jar, _ := cookiejar.New(nil)
	return jar
}

// Login opens the page's access link (baseURL/?token=token), as a browser following it
// does, so jar holds the access cookie that pages protected by HANDSET_BROWSER_TOKEN ask for.
func Login(ctx context.Context, baseURL string, jar http.CookieJar, token string) error {
	client := &http.Client{Jar: jar}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/?token="+url.QueryEscape(token), nil)
	if err != nil {
		return fmt.Errorf("browsercaller: login: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("browsercaller: login: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("browsercaller: login: HTTP %d", resp.StatusCode)
	}
	return nil
}

// Dial loads the call page at baseURL (for the caller cookie, kept in jar) and opens the
// media socket. It returns once the server announced the call.
func Dial(ctx context.Context, baseURL string, jar http.CookieJar) (*Call, error) {
	client := &http.Client{Jar: jar}
	base := strings.TrimRight(baseURL, "/")
	resp, err := client.Get(base + "/")
	if err != nil {
		return nil, fmt.Errorf("browsercaller: load page: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("browsercaller: load page: HTTP %d", resp.StatusCode)
	}
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/browser/ws"
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: client, HTTPHeader: http.Header{"Origin": {base}}})
	if err != nil {
		return nil, fmt.Errorf("browsercaller: dial: %w", err)
	}
	conn.SetReadLimit(1 << 20)
	_, msg, err := conn.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("browsercaller: waiting for ready: %w", err)
	}
	var ready struct {
		Type string `json:"type"`
		Call string `json:"call"`
		Rate int    `json:"rate"`
	}
	if err := json.Unmarshal(msg, &ready); err != nil || ready.Type != "ready" || ready.Rate != rate {
		conn.CloseNow()
		return nil, fmt.Errorf("browsercaller: want ready at %d Hz, got %q", rate, msg)
	}
	c := &Call{conn: conn, id: ready.Call, changed: make(chan struct{}), done: make(chan struct{})}
	go c.read()
	return c, nil
}

// ID is the call id the server announced.
func (c *Call) ID() string { return c.id }

func (c *Call) read() {
	defer close(c.done)
	ctx := context.Background()
	for {
		typ, msg, err := c.conn.Read(ctx)
		if err != nil {
			c.mu.Lock()
			c.ended = true
			if websocket.CloseStatus(err) == -1 {
				c.endCause = err
			}
			c.notifyLocked()
			c.mu.Unlock()
			return
		}
		if typ == websocket.MessageBinary {
			c.played(msg)
			continue
		}
		var m struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Event Event  `json:"event"`
		}
		if json.Unmarshal(msg, &m) != nil {
			continue
		}
		switch m.Type {
		case "event":
			c.mu.Lock()
			c.events = append(c.events, m.Event)
			c.notifyLocked()
			c.mu.Unlock()
		case "mark":
			c.mark(m.Name)
		case "clear":
			c.clear()
		}
	}
}

func (c *Call) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// played queues agent audio on the play clock.
func (c *Call) played(pcm []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.playEnd.Before(now) {
		c.playEnd = now
	}
	c.playEnd = c.playEnd.Add(time.Duration(len(pcm)/2) * time.Second / rate)
	c.audio = append(c.audio, pcm...)
	c.notifyLocked()
}

// mark echoes name when the audio before it has played.
func (c *Call) mark(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wait := time.Until(c.playEnd)
	var t *time.Timer
	t = time.AfterFunc(max(wait, 0), func() {
		c.mu.Lock()
		for i, p := range c.marks {
			if p == t {
				c.marks = append(c.marks[:i], c.marks[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		c.send(map[string]string{"type": "mark", "name": name})
	})
	c.marks = append(c.marks, t)
}

// clear drops queued audio: pending marks come back at once.
func (c *Call) clear() {
	c.mu.Lock()
	pending := c.marks
	c.marks = nil
	c.playEnd = time.Now()
	c.clears++
	c.mu.Unlock()
	for _, t := range pending {
		if t.Stop() {
			t.Reset(0) // fire now, in order of arrival
		}
	}
}

func (c *Call) send(v any) error {
	msg, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, msg)
}

// Say streams pcm (16 kHz) at real-time pace in 20 ms messages, then trailing silence of
// the given length so the server's VAD hears the end of speech.
func (c *Call) Say(ctx context.Context, pcm []int16, silence time.Duration) error {
	all := append(append([]int16(nil), pcm...), make([]int16, int(silence*rate/time.Second))...)
	const frame = rate / 50
	buf := make([]byte, frame*2)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < len(all); i += frame {
		n := min(frame, len(all)-i)
		for j := range n {
			binary.LittleEndian.PutUint16(buf[2*j:], uint16(all[i+j]))
		}
		if err := c.conn.Write(ctx, websocket.MessageBinary, buf[:2*n]); err != nil {
			return fmt.Errorf("browsercaller: send audio: %w", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Send writes a raw message, for tests of malformed input.
func (c *Call) Send(ctx context.Context, typ websocket.MessageType, msg []byte) error {
	return c.conn.Write(ctx, typ, msg)
}

// DTMF presses a key.
func (c *Call) DTMF(digit string) error {
	return c.send(map[string]string{"type": "dtmf", "digit": digit})
}

// Hangup ends the call the way the page's button does.
func (c *Call) Hangup() error {
	err := c.send(map[string]string{"type": "hangup"})
	c.conn.Close(websocket.StatusNormalClosure, "hang up")
	return err
}

// Done is closed when the socket has closed.
func (c *Call) Done() <-chan struct{} { return c.done }

// Err is why the socket failed, nil for a normal close.
func (c *Call) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endCause
}

// Events returns the journal events received so far.
func (c *Call) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

// Audio returns the agent audio received so far (PCM16 at 16 kHz).
func (c *Call) Audio() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.audio...)
}

// Clears counts the clear messages received.
func (c *Call) Clears() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clears
}

// ErrEnded is returned by WaitEvent when the call ended first.
var ErrEnded = errors.New("browsercaller: the call ended")

// WaitEvent waits for the n-th (1-based) event of type typ and returns it.
func (c *Call) WaitEvent(ctx context.Context, typ string, n int) (Event, error) {
	for {
		c.mu.Lock()
		seen := 0
		for _, e := range c.events {
			if e.Type == typ {
				if seen++; seen == n {
					c.mu.Unlock()
					return e, nil
				}
			}
		}
		changed, ended := c.changed, c.ended
		c.mu.Unlock()
		if ended {
			return Event{}, fmt.Errorf("%w before %s #%d", ErrEnded, typ, n)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, fmt.Errorf("waiting for %s #%d: %w", typ, n, ctx.Err())
		}
	}
}
