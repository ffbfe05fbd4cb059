package twiliocaller

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/clock"
)

// ErrEnded is returned by actions on a call whose stream has ended.
var ErrEnded = errors.New("twiliocaller: call ended")

const (
	// readLimit bounds one message from Handset; Twilio accepts media chunks of any size.
	readLimit = 4 << 20
	// writeTimeout bounds one write to Handset; a Handset that stops reading for this long
	// loses the call, as it would lose a real Twilio stream.
	writeTimeout = 10 * time.Second
	// maxLoggedErrors caps protocol-error log lines per call; all are still recorded.
	maxLoggedErrors = 10
)

// Call is one simulated call into Handset. All methods are safe for concurrent use.
type Call struct {
	opts      Options
	log       *slog.Logger
	clk       clock.Clock
	conn      *websocket.Conn
	twiml     StreamTwiML
	streamSid string
	t0        time.Time // when start was sent; every recorded time is relative to it

	ctx       context.Context
	cancel    context.CancelFunc
	running   atomic.Int32  // reader and writer; the last to return closes done
	done      chan struct{} // closed once both goroutines have returned
	wake      chan struct{} // size 1: one pending wake-up is all the writer needs
	hangingUp atomic.Bool
	seq       int // sequenceNumber of the last message sent; owned by the writer after Dial

	mu        sync.Mutex    // guards everything below
	events    []Event       // append-only, elements never change
	changed   chan struct{} // closed and replaced whenever an event is recorded
	out       []outItem     // messages for the writer, in order
	says      []*utterance  // caller speech waiting to be streamed, in order
	play      playback      // Twilio's playback buffer
	playTimer clock.Timer   // fires when the head of play falls due
	loggedErr int
	writeErr  error // why the writer gave up, for the reader to report
	ended     bool
	ending    Ending
}

type outKind uint8

const (
	outMark outKind = iota + 1
	outDTMF
	outRaw
)

type outItem struct {
	kind outKind
	text string
}

type utterance struct {
	audio []byte
	off   int
	sent  bool // every byte went out; guarded by Call.mu
	done  chan struct{}
}

// StreamDialError reports a Media Streams WebSocket that could not be opened; Status and
// Body are Handset's answer when it refused the upgrade.
type StreamDialError struct {
	URL    string
	Status int
	Body   string
	Err    error
}

func (e *StreamDialError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("twiliocaller: stream %s refused with %d; body %q: %v", e.URL, e.Status, e.Body, e.Err)
	}
	return fmt.Sprintf("twiliocaller: stream %s: %v", e.URL, e.Err)
}

func (e *StreamDialError) Unwrap() error { return e.Err }

// Dial places a call into Handset as Twilio would: it posts the signed voice webhook,
// requires a 200 answer with TwiML <Connect><Stream>, opens the WebSocket (signed over the
// TwiML's stream URL), sends connected and start, and starts streaming silence at real-time
// pace. ctx bounds the whole call: cancelling it drops the stream without a stop message.
// Errors are *WebhookError or *StreamDialError when Handset answered but badly.
func Dial(ctx context.Context, opts Options) (*Call, error) {
	o := opts.withDefaults()
	resp, err := PostWebhook(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, &WebhookError{Status: resp.Status, Body: string(resp.Body)}
	}
	tw, err := ParseTwiML(resp.Body)
	if err == nil {
		err = CheckStreamURL(tw.URL, o.InsecureStreamURL)
	}
	if err != nil {
		return nil, &WebhookError{Status: resp.Status, Body: string(resp.Body), Err: err}
	}
	dialURL, err := o.streamDialURL(tw.URL)
	if err != nil {
		return nil, &StreamDialError{URL: tw.URL, Err: err}
	}
	conn, err := dialStream(ctx, o.HTTPClient, dialURL, Signature(o.AuthToken, tw.URL, nil))
	if err != nil {
		return nil, err
	}
	c := newCall(ctx, o, tw, conn)
	if err := c.begin(); err != nil {
		c.cancel()
		_ = conn.CloseNow()
		return nil, err
	}
	c.log.Debug("twilio call connected", "call_sid", o.CallSid, "stream_sid", c.streamSid, "stream_url", tw.URL)
	c.running.Store(2)
	go c.readLoop()
	go c.writeLoop()
	return c, nil
}

// dialStream opens a Media Streams WebSocket with X-Twilio-Signature set to sig, or
// without the header when sig is empty.
func dialStream(ctx context.Context, client *http.Client, dialURL, sig string) (*websocket.Conn, error) {
	h := http.Header{}
	if sig != "" {
		h.Set(SignatureHeader, sig)
	}
	h.Set("User-Agent", "Twilio.TmeWs/1.0")
	conn, resp, err := websocket.Dial(ctx, dialURL, &websocket.DialOptions{HTTPClient: client, HTTPHeader: h})
	if err != nil {
		e := &StreamDialError{URL: dialURL, Err: err}
		if resp != nil {
			e.Status = resp.StatusCode
			if resp.Body != nil {
				var b bytes.Buffer
				_, _ = b.ReadFrom(resp.Body)
				e.Body = b.String()
			}
		}
		return nil, e
	}
	conn.SetReadLimit(readLimit)
	return conn, nil
}

// newCall builds a call around an open stream; conn may be nil in unit tests that only
// drive handleMessage.
func newCall(ctx context.Context, o Options, tw StreamTwiML, conn *websocket.Conn) *Call {
	c := &Call{
		opts:      o,
		log:       o.Logger.With("call_sid", o.CallSid),
		clk:       o.Clock,
		conn:      conn,
		twiml:     tw,
		streamSid: NewSid("MZ"),
		done:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
		changed:   make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.t0 = c.clk.Now()
	return c
}

// begin sends connected and start, and sets the stream's time origin.
func (c *Call) begin() error {
	if err := c.write(connectedMsg()); err != nil {
		return &StreamDialError{URL: c.twiml.URL, Err: fmt.Errorf("send connected: %w", err)}
	}
	c.t0 = c.clk.Now()
	c.seq++
	if err := c.write(startMsg(c.seq, c.streamSid, c.opts.AccountSid, c.opts.CallSid, c.twiml.Parameters)); err != nil {
		return &StreamDialError{URL: c.twiml.URL, Err: fmt.Errorf("send start: %w", err)}
	}
	return nil
}

func (c *Call) write(msg []byte) error {
	ctx, cancel := context.WithTimeout(c.ctx, writeTimeout)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, msg)
}

// rel is the time since stream start.
func (c *Call) rel() time.Duration { return c.clk.Now().Sub(c.t0) }

// exit runs as each goroutine returns; the last one closes the socket and Done.
func (c *Call) exit() {
	if c.running.Add(-1) == 0 {
		_ = c.conn.CloseNow()
		c.cancel()
		close(c.done)
	}
}

// finish records how the call ended (the first report wins) and stops everything.
func (c *Call) finish(e Ending) {
	c.mu.Lock()
	if !c.ended {
		unplayed := c.play.buffered()
		c.play = playback{}
		if c.playTimer != nil {
			c.playTimer.Stop()
		}
		for _, u := range c.says {
			close(u.done)
		}
		c.says, c.out = nil, nil
		e.At = c.rel()
		c.recordLocked(Event{Kind: Closed, Code: int(e.Code), Detail: e.Reason, Bytes: unplayed})
		c.ended, c.ending = true, e
		c.log.Debug("twilio call ended", "code", int(e.Code), "reason", e.Reason, "by_handset", e.ByHandset, "err", e.Err, "unplayed_bytes", unplayed)
	}
	c.mu.Unlock()
	c.cancel()
}

// readLoop is the reader: every message from Handset goes through handleMessage.
func (c *Call) readLoop() {
	defer c.exit()
	for {
		typ, data, err := c.conn.Read(c.ctx)
		if err != nil {
			c.readEnded(err)
			return
		}
		c.handleMessage(typ, data)
	}
}

func (c *Call) readEnded(err error) {
	var ce websocket.CloseError
	switch {
	case c.hangingUp.Load():
		c.finish(Ending{Code: websocket.StatusNormalClosure})
	case errors.As(err, &ce):
		e := Ending{ByHandset: true, Code: ce.Code, Reason: ce.Reason}
		if ce.Code != websocket.StatusNormalClosure {
			e.Err = fmt.Errorf("twiliocaller: handset closed the stream with %d %q", int(ce.Code), ce.Reason)
		}
		c.finish(e)
	case c.ctx.Err() != nil:
		c.finish(Ending{Code: -1, Err: context.Cause(c.ctx)})
	default:
		c.mu.Lock()
		werr := c.writeErr
		c.mu.Unlock()
		if werr != nil {
			err = werr
		}
		c.finish(Ending{Code: -1, Err: fmt.Errorf("twiliocaller: stream lost: %w", err)})
	}
}

// handleMessage applies one message from Handset to the playback buffer, or records why
// Twilio would have rejected it.
func (c *Call) handleMessage(typ websocket.MessageType, data []byte) {
	if typ != websocket.MessageText {
		c.protocolError(CodeMalformed, "binary frame", data)
		return
	}
	var m inMsg
	if err := json.Unmarshal(data, &m); err != nil {
		c.protocolError(CodeMalformed, "not JSON: "+err.Error(), data)
		return
	}
	switch m.Event {
	case "media", "mark", "clear":
	case "":
		c.protocolError(CodeMalformed, "no event", data)
		return
	default:
		c.protocolError(CodeProtocol, fmt.Sprintf("unknown event %q", m.Event), data)
		return
	}
	if m.StreamSid != c.streamSid {
		c.protocolError(CodeProtocol, fmt.Sprintf("%s for streamSid %q, want %q", m.Event, m.StreamSid, c.streamSid), data)
		return
	}
	switch m.Event {
	case "media":
		if m.Media == nil || m.Media.Payload == nil {
			c.protocolError(CodeMalformed, "media without media.payload", data)
			return
		}
		pcm, err := base64.StdEncoding.DecodeString(*m.Media.Payload)
		if err != nil {
			c.protocolError(CodeMalformed, "media payload is not base64: "+err.Error(), data)
			return
		}
		c.receiveAudio(pcm)
	case "mark":
		if m.Mark == nil || m.Mark.Name == nil || *m.Mark.Name == "" {
			c.protocolError(CodeMalformed, "mark without mark.name", data)
			return
		}
		c.receiveMark(*m.Mark.Name)
	case "clear":
		c.receiveClear()
	}
}

func (c *Call) protocolError(code int, detail string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.protocolErrorLocked(code, detail, data)
}

func (c *Call) protocolErrorLocked(code int, detail string, data []byte) {
	c.recordLocked(Event{Kind: ProtocolError, Code: code, Detail: detail})
	c.loggedErr++
	if c.loggedErr <= maxLoggedErrors {
		const maxQuote = 200
		c.log.Warn("twilio protocol error from handset", "code", code, "detail", detail, "message", string(data[:min(len(data), maxQuote)]))
	}
}

func (c *Call) receiveAudio(mulaw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	now := c.rel()
	c.advanceLocked(now)
	c.recordLocked(Event{Kind: AudioReceived, Bytes: len(mulaw), Audio: mulaw})
	if !c.play.addAudio(now, mulaw) {
		c.protocolErrorLocked(CodeOverflow, fmt.Sprintf("more than %v of audio buffered; %d bytes discarded", maxBuffered, len(mulaw)), nil)
	}
	c.advanceLocked(now)
}

func (c *Call) receiveMark(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	now := c.rel()
	c.advanceLocked(now)
	c.recordLocked(Event{Kind: MarkSent, Name: name})
	c.play.addMark(now, name)
	c.advanceLocked(now)
}

func (c *Call) receiveClear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	now := c.rel()
	c.advanceLocked(now)
	heard, marks, dropped := c.play.clear(now)
	for _, p := range heard {
		c.recordLocked(Event{Kind: AudioPlayed, Start: p.start, End: p.end, Bytes: len(p.audio), Audio: p.audio})
	}
	c.recordLocked(Event{Kind: Clear, Bytes: dropped})
	for _, name := range marks {
		c.echoMarkLocked(name, true)
	}
	c.advanceLocked(now)
}

// advanceLocked plays out everything due by now and re-arms the playback timer. A clock
// may jump while the timer is armed (a fake clock advanced by another goroutine), so if
// the next piece is already due once armed, it plays that too rather than wait a turn.
func (c *Call) advanceLocked(now time.Duration) {
	for {
		for _, p := range c.play.due(now) {
			if p.audio == nil {
				c.echoMarkLocked(p.mark, false)
				continue
			}
			c.recordLocked(Event{Kind: AudioPlayed, Start: p.start, End: p.end, Bytes: len(p.audio), Audio: p.audio})
		}
		at, ok := c.play.next()
		switch {
		case !ok:
			if c.playTimer != nil {
				c.playTimer.Stop()
			}
			return
		case c.playTimer == nil:
			c.playTimer = c.clk.AfterFunc(at-now, c.onPlayTimer)
		default:
			c.playTimer.Reset(at - now)
		}
		if now = c.rel(); now < at {
			return
		}
	}
}

// onPlayTimer is the playback clock: it runs when the head of the buffer falls due.
func (c *Call) onPlayTimer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.advanceLocked(c.rel())
}

func (c *Call) echoMarkLocked(name string, cleared bool) {
	c.recordLocked(Event{Kind: MarkEchoed, Name: name, Cleared: cleared})
	c.out = append(c.out, outItem{kind: outMark, text: name})
	c.wakeWriter()
}

func (c *Call) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// recordLocked appends e to the timeline, stamped with the current time, and wakes WaitFor.
func (c *Call) recordLocked(e Event) {
	e.At = c.rel()
	c.events = append(c.events, e)
	close(c.changed)
	c.changed = make(chan struct{})
}

// writeLoop is the writer: every message to Handset goes through it, media frames on the
// schedule start + n×20 ms (late frames are sent at once to catch up, never skipped).
func (c *Call) writeLoop() {
	defer c.exit()
	timer := c.clk.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var (
		frame    [pieceBytes]byte
		buf      = make([]byte, 0, 512)
		finished []*utterance
	)
	for n := 0; ; {
		// Load the flag before draining, so everything queued before Hangup goes out first.
		hangingUp := c.hangingUp.Load()
		items, ok := c.takeOutgoing()
		for _, it := range items {
			if err := c.writeItem(it); err != nil {
				c.writeFailed(err)
				return
			}
		}
		if !ok {
			return
		}
		if hangingUp {
			c.hangup()
			return
		}
		now := c.clk.Now()
		due := c.t0.Add(time.Duration(n) * audio.FrameDuration)
		if !now.Before(due) {
			finished = c.nextFrame(frame[:], finished[:0])
			c.seq++
			n++
			buf = appendMediaMsg(buf[:0], c.seq, n, int64(due.Sub(c.t0)/time.Millisecond), c.streamSid, frame[:])
			err := c.write(buf)
			c.sayDone(finished, err == nil)
			if err != nil {
				c.writeFailed(err)
				return
			}
			continue
		}
		timer.Reset(due.Sub(now))
		if !c.clk.Now().Before(due) {
			continue // the clock jumped while the timer was armed (a fake clock can)
		}
		select {
		case <-timer.C():
		case <-c.wake:
		case <-c.ctx.Done():
			c.finish(Ending{Code: -1, Err: context.Cause(c.ctx)})
			return
		}
	}
}

// writeFailed drops the socket after a failed write; the reader sees it go and reports the
// end, preferring a close status from Handset over this error.
func (c *Call) writeFailed(err error) {
	c.mu.Lock()
	c.writeErr = fmt.Errorf("write: %w", err)
	c.mu.Unlock()
	_ = c.conn.CloseNow()
}

// takeOutgoing hands the writer the queued messages; ok is false once the call has ended.
func (c *Call) takeOutgoing() (items []outItem, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	items, c.out = c.out, nil
	return items, !c.ended
}

func (c *Call) writeItem(it outItem) error {
	if it.kind == outRaw {
		if err := c.write([]byte(it.text)); err != nil {
			return err
		}
		c.record(Event{Kind: RawSent, Detail: it.text})
		return nil
	}
	c.seq++
	switch it.kind {
	case outMark:
		return c.write(markMsg(c.seq, c.streamSid, it.text))
	case outDTMF:
		if err := c.write(dtmfMsg(c.seq, c.streamSid, it.text)); err != nil {
			return err
		}
		c.record(Event{Kind: DTMFSent, Name: it.text})
	}
	return nil
}

// hangup sends stop and closes the socket normally, as Twilio does when the caller hangs up.
func (c *Call) hangup() {
	c.seq++
	err := c.write(stopMsg(c.seq, c.streamSid, c.opts.AccountSid, c.opts.CallSid))
	if err == nil {
		c.record(Event{Kind: StopSent})
	}
	if cerr := c.conn.Close(websocket.StatusNormalClosure, ""); cerr != nil {
		c.log.Debug("twilio stream close handshake", "err", cerr)
	}
	e := Ending{Code: websocket.StatusNormalClosure}
	if err != nil {
		e.Err = fmt.Errorf("twiliocaller: send stop: %w", err)
	}
	c.finish(e)
}

func (c *Call) record(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		c.recordLocked(e)
	}
}

// nextFrame fills frame with the next 20 ms of caller speech, padded with silence, and
// appends to finished the utterances whose last byte it took.
func (c *Call) nextFrame(frame []byte, finished []*utterance) []*utterance {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < len(frame) && len(c.says) > 0 {
		u := c.says[0]
		if u.off == 0 {
			c.recordLocked(Event{Kind: SayStarted, Bytes: len(u.audio)})
		}
		m := copy(frame[n:], u.audio[u.off:])
		u.off += m
		n += m
		if u.off == len(u.audio) {
			finished = append(finished, u)
			c.says[0] = nil
			c.says = c.says[1:]
		}
	}
	for i := n; i < len(frame); i++ {
		frame[i] = g711.MulawSilence
	}
	return finished
}

// sayDone closes the utterances a frame finished, once the frame has been written.
func (c *Call) sayDone(finished []*utterance, sent bool) {
	if len(finished) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range finished {
		if sent && !c.ended {
			u.sent = true
			c.recordLocked(Event{Kind: SayFinished, Bytes: len(u.audio)})
		}
		close(u.done)
	}
}

func (c *Call) say(mulaw []byte) *utterance {
	u := &utterance{audio: bytes.Clone(mulaw), done: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.ended:
		close(u.done)
	case len(mulaw) == 0:
		u.sent = true
		close(u.done)
	default:
		c.says = append(c.says, u)
	}
	return u
}

// Say queues caller speech (8 kHz mu-law) to be streamed after anything queued before it,
// at real-time pace, and returns at once. The channel is closed when the last frame has
// been sent, or when the call ends first. mulaw is copied.
func (c *Call) Say(mulaw []byte) <-chan struct{} { return c.say(mulaw).done }

// SayAndWait queues caller speech and waits until its last frame has been sent. It fails
// with ErrEnded if the call ends first, or with ctx's error.
func (c *Call) SayAndWait(ctx context.Context, mulaw []byte) error {
	u := c.say(mulaw)
	select {
	case <-u.done:
	case <-ctx.Done():
		return fmt.Errorf("twiliocaller: say: %w", context.Cause(ctx))
	}
	c.mu.Lock()
	sent := u.sent
	c.mu.Unlock()
	if !sent {
		return fmt.Errorf("twiliocaller: say: %w before all audio was sent", ErrEnded)
	}
	return nil
}

// Silence is d of mu-law silence, for building caller scripts with pauses.
func Silence(d time.Duration) []byte {
	return bytes.Repeat([]byte{g711.MulawSilence}, audioBytes(d))
}

// DTMF sends a dtmf event for one key press: 0-9, * or #.
func (c *Call) DTMF(digit string) error {
	if len(digit) != 1 || !strings.Contains("0123456789*#", digit) {
		return fmt.Errorf("twiliocaller: dtmf digit %q: want one of 0-9 * #", digit)
	}
	return c.enqueue(outItem{kind: outDTMF, text: digit})
}

// SendRaw writes text to Handset as one text frame, exactly as given, in order with the
// other messages: for fault injection (malformed JSON, bad base64, unknown events).
func (c *Call) SendRaw(text string) error {
	return c.enqueue(outItem{kind: outRaw, text: text})
}

func (c *Call) enqueue(it outItem) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return ErrEnded
	}
	c.out = append(c.out, it)
	c.wakeWriter()
	return nil
}

// Hangup ends the call as a caller hanging up: queued messages go out, then stop, then a
// normal close. It waits for the call's goroutines and returns Err. Calling it again, or
// after the call ended, just returns Err.
func (c *Call) Hangup() error {
	c.hangingUp.Store(true)
	c.wakeWriter()
	<-c.done
	return c.Err()
}

// Done is closed once the call has ended (Hangup, Handset closing the socket, a failure or
// the context) and its goroutines have returned.
func (c *Call) Done() <-chan struct{} { return c.done }

// Err is why the call ended abnormally: nil while it runs, after Hangup, and after
// Handset closed the stream with 1000.
func (c *Call) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ending.Err
}

// Ending reports how the call ended; ok is false while it runs.
func (c *Call) Ending() (e Ending, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ending, c.ended
}

// CallSid, AccountSid and StreamSid identify the call as Twilio would.
func (c *Call) CallSid() string    { return c.opts.CallSid }
func (c *Call) AccountSid() string { return c.opts.AccountSid }
func (c *Call) StreamSid() string  { return c.streamSid }

// TwiML is the stream Handset's webhook answer asked for.
func (c *Call) TwiML() StreamTwiML {
	tw := c.twiml
	tw.Parameters = make(map[string]string, len(c.twiml.Parameters))
	for k, v := range c.twiml.Parameters {
		tw.Parameters[k] = v
	}
	tw.Verbs = append([]string(nil), c.twiml.Verbs...)
	return tw
}

// Elapsed is the time since the stream started, on the call's clock; recorded times use
// the same origin.
func (c *Call) Elapsed() time.Duration { return c.rel() }

// Snapshot returns the recording so far.
func (c *Call) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotLocked()
}

func (c *Call) snapshotLocked() Snapshot {
	return Snapshot{Events: c.events[:len(c.events):len(c.events)], Ended: c.ended, Ending: c.ending}
}

// Events is the timeline so far. The elements are shared and must not be modified.
func (c *Call) Events() []Event { return c.Snapshot().Events }

// PlayedAudio is the mu-law the caller has heard so far.
func (c *Call) PlayedAudio() []byte { return c.Snapshot().PlayedAudio() }

// Clears is how many clear messages Handset has sent.
func (c *Call) Clears() int { return c.Snapshot().Clears() }

// Marks lists Handset's marks so far with their echoes.
func (c *Call) Marks() []Mark { return c.Snapshot().Marks() }

// ProtocolErrors lists what Handset sent that Twilio would have rejected.
func (c *Call) ProtocolErrors() []Event { return c.Snapshot().ProtocolErrors() }

// SpeechSegments are the runs of speech the caller has heard so far.
func (c *Call) SpeechSegments() []SpeechSegment { return c.Snapshot().SpeechSegments() }

// HeardSpeech reports whether the caller heard speech overlapping [from, to).
func (c *Call) HeardSpeech(from, to time.Duration) bool {
	return c.Snapshot().HeardSpeech(from, to)
}

// WaitFor blocks until cond holds over the recording, re-checking on every new event. It
// fails with ErrEnded if the call ends with cond still false, or with ctx's error; both
// errors describe the recording.
func (c *Call) WaitFor(ctx context.Context, cond func(Snapshot) bool) error {
	for {
		c.mu.Lock()
		s, changed := c.snapshotLocked(), c.changed
		c.mu.Unlock()
		if cond(s) {
			return nil
		}
		if s.Ended {
			return fmt.Errorf("twiliocaller: wait: %w with the condition unmet: %v", ErrEnded, s)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("twiliocaller: wait: %w: %v", context.Cause(ctx), s)
		}
	}
}
