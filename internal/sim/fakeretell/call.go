package fakeretell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Utterance is one turn of the transcript, as Retell sends it.
type Utterance struct {
	Role    string `json:"role"` // "agent" or "user"
	Content string `json:"content"`
}

// Config is what the server asked for in its config event.
type Config struct {
	AutoReconnect           bool `json:"auto_reconnect"`
	CallDetails             bool `json:"call_details"`
	TranscriptWithToolCalls bool `json:"transcript_with_tool_calls"`
}

// Options shape the call the fake places. The zero value is a web call with Retell's timings.
type Options struct {
	Header http.Header // sent with the WebSocket handshake

	// The call object sent in call_details, when the server asks for it. With From or To
	// set it is a phone call, otherwise a web call.
	AgentID          string // default "agent_fakeretell"
	From, To         string // E.164 numbers
	Direction        string // "inbound" or "outbound"
	Metadata         map[string]any
	DynamicVariables map[string]string // retell_llm_dynamic_variables

	PingEvery   time.Duration // ping_pong interval once auto_reconnect is set; default 2 s
	PongTimeout time.Duration // silence from the server that counts as a missed pong; default 5 s
	SpeakRate   float64       // characters of agent text spoken a second; default 15
}

// BargeIn says when, during an agent reply, the user starts talking over it. The zero value
// barges in at once; otherwise the first non-zero field decides.
type BargeIn struct {
	Chars int           // once this many characters of the reply have been heard
	After time.Duration // this long after the agent started speaking the reply
}

// ErrSuperseded is returned when waiting for a reply the fake has stopped asking for.
var ErrSuperseded = errors.New("fakeretell: response superseded")

// Call is one call's LLM WebSocket, seen from Retell's side.
type Call struct {
	id   string
	opts Options
	conn *websocket.Conn

	ctx    context.Context // cancelled by Close or when the connection ends
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}

	// sendMu keeps requests on the wire in the order of their ids: a new id is allocated and
	// sent under it. Lock it before mu.
	sendMu sync.Mutex

	closeOnce sync.Once
	closeErr  error

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change of state, to wake waiters
	ended       bool          // the read loop has stopped
	closing     bool          // Close has begun
	readErr     error
	config      *Config
	detailsSent bool
	pinging     bool
	pings       map[int64]bool // timestamps of the pings sent
	lastPong    time.Time
	pongLate    bool // a missed pong has been counted for the current silence
	missedPongs int
	latest      int // the latest response_id asked for
	replies     map[int]*reply
	transcript  []Utterance // everything but the reply being spoken now
	violations  []string
	received    map[string][]json.RawMessage
}

// A reply is what the server sent for one response_id.
type reply struct {
	frames   int // frames accepted for it, or counted stale
	text     string
	deltas   []delta
	complete bool
	endCall  bool
	cut      bool // the user barged in before the agent had said it all
	stale    int
}

// A delta is a piece of reply text and when it arrived, for the speech clock.
type delta struct {
	at    time.Time
	runes int
}

// Dial places a call: it connects to baseURL/callID as Retell does and starts reading the
// server's events. ctx bounds only the handshake.
func Dial(ctx context.Context, baseURL, callID string, opts Options) (*Call, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("fakeretell: base URL: %w", err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + callID
	u.RawPath = ""
	if opts.AgentID == "" {
		opts.AgentID = "agent_fakeretell"
	}
	if opts.PingEvery <= 0 {
		opts.PingEvery = 2 * time.Second
	}
	if opts.PongTimeout <= 0 {
		opts.PongTimeout = 5 * time.Second
	}
	if opts.SpeakRate <= 0 {
		opts.SpeakRate = 15
	}
	conn, _, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPHeader: opts.Header})
	if err != nil {
		return nil, fmt.Errorf("fakeretell: dial %s: %w", u, err)
	}
	conn.SetReadLimit(1 << 20)
	c := &Call{
		id:       callID,
		opts:     opts,
		conn:     conn,
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		pings:    map[int64]bool{},
		replies:  map[int]*reply{0: {}}, // the begin message is asked for by connecting
		received: map[string][]json.RawMessage{},
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1)
	go c.readLoop()
	return c, nil
}

// WaitBegin waits for the begin message (response 0) to complete and returns its text,
// empty when the user is to speak first.
func (c *Call) WaitBegin(ctx context.Context) (string, error) { return c.WaitResponse(ctx, 0) }

// WaitResponse waits for the reply to response id to complete and returns its full text.
// It fails with ErrSuperseded if a newer request went out before the reply completed.
func (c *Call) WaitResponse(ctx context.Context, id int) (string, error) {
	var text string
	err := c.waitFor(ctx, func() (bool, error) {
		r, ok := c.replies[id]
		switch {
		case !ok:
			return false, fmt.Errorf("fakeretell: response %d was never asked for", id)
		case r.complete:
			text = r.text
			return true, nil
		case id < c.latest:
			return false, fmt.Errorf("%w: response %d, by %d", ErrSuperseded, id, c.latest)
		}
		return false, nil
	})
	return text, err
}

// Say has the user speak once the agent has finished: the current reply's text so far and
// then text join the transcript, and a response_required goes out. It returns the new id.
func (c *Call) Say(ctx context.Context, text string) (int, error) {
	if text == "" {
		return 0, errors.New("fakeretell: Say needs some text")
	}
	return c.ask(ctx, "response_required", text, -1, -1)
}

// Remind asks for a reminder (reminder_required), as Retell does when the user stays quiet,
// and returns its id.
func (c *Call) Remind(ctx context.Context) (int, error) {
	return c.ask(ctx, "reminder_required", "", -1, -1)
}

// UpdateOnly sends the transcript as it stands in an update_only event. turntaking is "",
// "agent_turn" or "user_turn".
func (c *Call) UpdateOnly(ctx context.Context, turntaking string) error {
	ev := map[string]any{"interaction_type": "update_only"}
	switch turntaking {
	case "":
	case "agent_turn", "user_turn":
		ev["turntaking"] = turntaking
	default:
		return fmt.Errorf("fakeretell: turntaking %q", turntaking)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	ev["transcript"] = c.transcriptLocked()
	c.mu.Unlock()
	return c.write(ctx, ev)
}

// Interrupt has the user talk over the agent's reply to response id, which must be the
// latest asked for: it waits for the moment at says (After counts from the reply's first
// text; a reply that ends before then is heard in full), cuts the agent's utterance to what
// had been heard by then, adds text as the user's, and sends a response_required, whose id
// it returns. From then on frames for id are stale, and its end_call is dropped if the user
// cut it short.
func (c *Call) Interrupt(ctx context.Context, id int, at BargeIn, text string) (int, error) {
	// Speech runs on the clock, not on events, so poll as well as listen.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		c.mu.Lock()
		if id != c.latest {
			c.mu.Unlock()
			return 0, fmt.Errorf("fakeretell: interrupt %d: the agent is on response %d", id, c.latest)
		}
		heard, ready := c.replies[id].bargeIn(at, time.Now(), c.opts.SpeakRate)
		ended, changed := c.ended, c.changed
		c.mu.Unlock()
		if ready {
			return c.ask(ctx, "response_required", text, id, heard)
		}
		if ended {
			return 0, c.endedErr()
		}
		select {
		case <-tick.C:
		case <-changed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// ask commits the current reply (cut to heard runes when heard >= 0) and the user's text to
// the transcript, then asks for the next response. With cutID >= 0 the current reply must
// be cutID's: another request may have gone out since the barge-in was timed.
func (c *Call) ask(ctx context.Context, kind, userText string, cutID, heard int) (int, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return 0, c.endedErr()
	}
	if cutID >= 0 && cutID != c.latest {
		c.mu.Unlock()
		return 0, fmt.Errorf("fakeretell: interrupt %d: the agent is on response %d", cutID, c.latest)
	}
	cur := c.replies[c.latest]
	spoken := cur.text
	if heard >= 0 && heard < utf8.RuneCountInString(spoken) {
		spoken = string([]rune(spoken)[:heard])
		cur.cut = true
	}
	if spoken != "" {
		c.transcript = append(c.transcript, Utterance{Role: "agent", Content: spoken})
	}
	if userText != "" {
		c.transcript = append(c.transcript, Utterance{Role: "user", Content: userText})
	}
	c.latest++
	id := c.latest
	c.replies[id] = &reply{}
	ev := map[string]any{"interaction_type": kind, "response_id": id, "transcript": c.transcriptLocked()}
	c.broadcastLocked()
	c.mu.Unlock()
	return id, c.write(ctx, ev)
}

// Transcript returns the call's transcript as Retell would send it now.
func (c *Call) Transcript() []Utterance {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.transcriptLocked()
}

func (c *Call) transcriptLocked() []Utterance {
	t := append([]Utterance{}, c.transcript...)
	if text := c.replies[c.latest].text; text != "" {
		t = append(t, Utterance{Role: "agent", Content: text})
	}
	return t
}

// LatestID returns the latest response_id asked for (0 until the user speaks).
func (c *Call) LatestID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest
}

// Config returns the server's config event, and whether there was one.
func (c *Call) Config() (Config, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.config == nil {
		return Config{}, false
	}
	return *c.config, true
}

// MissedPongs counts the times the server stayed silent past PongTimeout while pinged.
func (c *Call) MissedPongs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.missedPongs
}

// Stale counts the response frames for id that arrived after a newer request had gone out.
func (c *Call) Stale(id int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.replies[id]; r != nil {
		return r.stale
	}
	return 0
}

// StaleTotal counts stale response frames for every id.
func (c *Call) StaleTotal() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.replies {
		n += r.stale
	}
	return n
}

// EndedByAgent reports whether a completed, current reply asked to end the call and the
// user did not cut it short, so Retell would hang up once it had been spoken.
func (c *Call) EndedByAgent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.replies {
		if r.endCall && r.complete && !r.cut {
			return true
		}
	}
	return false
}

// Received returns the frames of one response_type the server sent, in order.
func (c *Call) Received(responseType string) []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]json.RawMessage(nil), c.received[responseType]...)
}

// Violations returns the protocol errors seen so far, one sentence each. A missing begin
// message is only known, and recorded, at Close.
func (c *Call) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// Done is closed when the connection has ended, whichever side ended it.
func (c *Call) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended if the server ended it (see websocket.CloseStatus),
// or nil.
func (c *Call) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// Close hangs up: a normal closure, as when the caller hangs up. It returns once the fake's
// goroutines have exited.
func (c *Call) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closing = true
		if c.replies[0].frames == 0 {
			c.noteLocked("the server never sent the begin message (response 0)")
		}
		serverGone := c.ended
		c.mu.Unlock()
		err := c.conn.Close(websocket.StatusNormalClosure, "")
		c.cancel()
		c.wg.Wait()
		if !serverGone {
			c.closeErr = err
		}
	})
	return c.closeErr
}

// waitFor waits until cond (run under mu) is true or fails, the call ends, or ctx is done.
func (c *Call) waitFor(ctx context.Context, cond func() (bool, error)) error {
	for {
		c.mu.Lock()
		ok, err := cond()
		ended, changed := c.ended, c.changed
		c.mu.Unlock()
		if ok || err != nil {
			return err
		}
		if ended {
			return c.endedErr()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Call) endedErr() error {
	if err := c.Err(); err != nil {
		return fmt.Errorf("fakeretell: call %s ended: %w", c.id, err)
	}
	return fmt.Errorf("fakeretell: call %s is closed", c.id)
}

func (c *Call) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Call) noteLocked(format string, args ...any) {
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
	c.broadcastLocked()
}

func (c *Call) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noteLocked(format, args...)
}

// send writes one event; for events whose place in the order does not matter.
func (c *Call) send(ctx context.Context, ev any) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.write(ctx, ev)
}

// write writes one event; the caller holds sendMu.
func (c *Call) write(ctx context.Context, ev any) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("fakeretell: send: %w", err)
	}
	return nil
}

// heardBy returns how many runes of the reply had been spoken by t: speech starts when the
// first text arrives, runs at rate runes a second, and waits when it has caught up.
func (r *reply) heardBy(t time.Time, rate float64) int {
	heard := 0
	var free time.Time // when the voice finishes what it was given before
	for _, d := range r.deltas {
		start := d.at
		if start.Before(free) {
			start = free
		}
		if !t.After(start) {
			break
		}
		if spoken := int(float64(t.Sub(start)) * rate / float64(time.Second)); spoken < d.runes {
			return heard + spoken
		}
		heard += d.runes
		free = start.Add(time.Duration(float64(d.runes) / rate * float64(time.Second)))
	}
	return heard
}

// bargeIn reports whether the moment at has come for this reply, and if so how many runes
// had been heard at that moment.
func (r *reply) bargeIn(at BargeIn, now time.Time, rate float64) (heard int, ready bool) {
	total := utf8.RuneCountInString(r.text)
	switch {
	case at.Chars > 0:
		h := r.heardBy(now, rate)
		if h >= at.Chars {
			return at.Chars, true
		}
		// The agent said it all before reaching Chars: the user speaks after it.
		return h, r.complete && h == total
	case at.After > 0:
		if len(r.deltas) == 0 {
			return 0, r.complete // nothing will be said: speak now
		}
		when := r.deltas[0].at.Add(at.After)
		if now.Before(when) {
			return 0, false
		}
		return r.heardBy(when, rate), true
	}
	return r.heardBy(now, rate), true
}
