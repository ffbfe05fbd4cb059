package twiliocaller

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
)

// The call's two goroutines and the playback clock. The reader applies Handset's messages
// to the playback buffer; the writer sends media on schedule and every other message in
// order; the playback timer plays the buffer out and returns marks.

// maxKeptReadBuf bounds the read and decode buffers kept between messages: a rare large
// chunk from Handset is read, then its buffers go.
const maxKeptReadBuf = 64 << 10

// readLoop is the reader: every message from Handset goes through handleMessage. Each is
// read into one reused buffer (handleMessage keeps nothing of it), not a fresh slice.
func (c *Call) readLoop() {
	defer c.exit()
	for {
		typ, data, err := c.read()
		if err != nil {
			c.readEnded(err)
			return
		}
		c.handleMessage(typ, data)
		if c.rbuf.Cap() > maxKeptReadBuf {
			c.rbuf = bytes.Buffer{}
		}
		if cap(c.pcm) > maxKeptReadBuf {
			c.pcm = nil
		}
	}
}

// read is conn.Read into c.rbuf: the data is valid until the next read.
func (c *Call) read() (websocket.MessageType, []byte, error) {
	typ, r, err := c.conn.Reader(c.ctx)
	if err != nil {
		return 0, nil, err
	}
	c.rbuf.Reset()
	_, err = c.rbuf.ReadFrom(r)
	return typ, c.rbuf.Bytes(), err
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
	if mulaw, ok := c.fastMedia(data); ok {
		c.receiveAudio(mulaw)
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

// The media message exactly as Handset writes it, around the streamSid and the payload.
const (
	mediaHead = `{"event":"media","streamSid":"`
	mediaMid  = `","media":{"payload":"`
	mediaTail = `"}}`
)

// fastMedia is the per-frame fast path of handleMessage. It takes only a message that is
// exactly {"event":"media","streamSid":"<this stream>","media":{"payload":"<base64>"}}
// with a payload that decodes, and returns the audio without encoding/json. Anything else
// (other spacing or order, escapes, a bad payload) reports false and goes the general
// way, so the two paths cannot disagree. The audio is fresh, since the recording and the
// playback buffer keep it, except on a lean call without echo, which keeps neither: there
// it is c.pcm, reused.
func (c *Call) fastMedia(msg []byte) (mulaw []byte, ok bool) {
	rest, ok := cutPrefix(msg, mediaHead)
	if ok {
		rest, ok = cutPrefix(rest, c.streamSid)
	}
	if ok {
		rest, ok = cutPrefix(rest, mediaMid)
	}
	if !ok || len(rest) < len(mediaTail) || string(rest[len(rest)-len(mediaTail):]) != mediaTail {
		return nil, false
	}
	payload := rest[:len(rest)-len(mediaTail)]
	for _, b := range payload {
		if !isBase64Char(b) {
			return nil, false
		}
	}
	n := base64.StdEncoding.DecodedLen(len(payload))
	var dst []byte
	if c.opts.Lean && c.opts.Echo == nil {
		if cap(c.pcm) < n {
			c.pcm = make([]byte, n)
		}
		dst = c.pcm[:n]
	} else {
		dst = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(dst, payload)
	if err != nil {
		return nil, false
	}
	return dst[:n], true
}

// cutPrefix is bytes.CutPrefix for a string prefix, without converting it.
func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return nil, false
	}
	return b[len(prefix):], true
}

// isBase64Char reports whether b is in the standard base64 alphabet or is padding.
func isBase64Char(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '+' || b == '/' || b == '='
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
	c.counters.ReceivedFrames++
	c.counters.ReceivedBytes += int64(len(mulaw))
	if !c.opts.Lean {
		c.recordLocked(Event{Kind: AudioReceived, Bytes: len(mulaw), Audio: mulaw})
	}
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
		c.playedLocked(p)
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
			if p.isMark() {
				c.echoMarkLocked(p.mark, false)
				continue
			}
			c.playedLocked(p)
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

// playedLocked records a piece of Handset's audio that played, wholly or (cut by a clear)
// in part, and hands it to the echo path.
func (c *Call) playedLocked(p piece) {
	c.counters.PlayedFrames++
	c.counters.PlayedBytes += int64(p.n)
	if !c.opts.Lean {
		c.recordLocked(Event{Kind: AudioPlayed, Start: p.start, End: p.end, Bytes: p.n, Audio: p.audio})
	}
	if c.echo != nil {
		c.echo.played(p)
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
	c.notifyLocked()
}

// notifyLocked wakes every WaitFor after the recording changed.
func (c *Call) notifyLocked() {
	if c.watched {
		close(c.changed)
		c.changed = make(chan struct{})
		c.watched = false
	}
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
			finished = c.nextFrame(frame[:], due.Sub(c.t0), finished[:0])
			c.seq++
			n++
			buf = appendMediaMsg(buf[:0], c.seq, n, int64(due.Sub(c.t0)/time.Millisecond), c.streamSid, frame[:])
			err := c.write(buf)
			c.frameSent(finished, err == nil)
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
	if c.writeErr == nil { // the watchdog's reason, when it fired, comes first
		c.writeErr = fmt.Errorf("write: %w", err)
	}
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
	// Recorded as it goes out, not after: Handset answers stop by closing the socket, and
	// the reader can end the call (which closes the recording) before the write returns.
	c.record(Event{Kind: StopSent})
	err := c.write(stopMsg(c.seq, c.streamSid, c.opts.AccountSid, c.opts.CallSid))
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

// nextFrame fills frame, the media frame with timestamp at, with the next 20 ms of caller
// speech, padded with silence and mixed with the echo when the line has one, and appends
// to finished the utterances whose last byte it took.
func (c *Call) nextFrame(frame []byte, at time.Duration, finished []*utterance) []*utterance {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < len(frame) && len(c.says) > 0 {
		u := c.says[0]
		if u.off == 0 {
			c.recordLocked(Event{Kind: SayStarted, Bytes: len(u.audio), Start: at + audioDuration(n)})
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
	if c.echo != nil {
		c.echo.mix(frame, at, c.play.pending())
	}
	return finished
}

// frameSent counts a media frame once it has been written, and closes the utterances it
// finished.
func (c *Call) frameSent(finished []*utterance, sent bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent {
		c.counters.SentFrames++
	}
	for _, u := range finished {
		if sent && !c.ended {
			u.sent = true
			c.recordLocked(Event{Kind: SayFinished, Bytes: len(u.audio)})
		}
		close(u.done)
	}
}
