package phone

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
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
		if cap(c.pcm) > maxKeptReadBuf {
			c.pcm = nil
		}
		if cap(c.scratch) > maxKeptReadBuf {
			c.scratch = nil
		}
	}
}

// read is the transport's next message: the data is valid until the next read.
func (c *Call) read() (websocket.MessageType, []byte, error) { return c.conn.Read(c.ctx) }

func (c *Call) readEnded(err error) {
	var ce websocket.CloseError
	switch {
	case c.hangingUp.Load():
		c.finish(Ending{Code: websocket.StatusNormalClosure})
	case errors.As(err, &ce):
		e := Ending{ByHandset: true, Code: ce.Code, Reason: ce.Reason}
		if ce.Code != websocket.StatusNormalClosure {
			e.Err = fmt.Errorf("phone: handset closed the stream with %d %q", int(ce.Code), ce.Reason)
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
		c.finish(Ending{Code: -1, Err: fmt.Errorf("phone: stream lost: %w", err)})
	}
}

// handleMessage applies one message from Handset to the playback buffer, or records why
// the carrier would have rejected it.
func (c *Call) handleMessage(typ websocket.MessageType, data []byte) {
	in, err := c.wire.Decode(typ, data, c.scratch)
	if in.Scratch != nil {
		c.scratch = in.Scratch
	}
	if err != nil {
		var pe *WireError
		if errors.As(err, &pe) {
			c.protocolError(pe.Code, pe.Detail, data)
		} else {
			c.protocolError(c.info.MalformedCode, err.Error(), data)
		}
		return
	}
	switch in.Kind {
	case InMedia:
		c.receiveAudio(c.toMulaw(in.Audio))
	case InMark:
		c.receiveMark(in.Name)
	case InClear:
		c.receiveClear()
	}
}

// toMulaw turns the wire's audio into the 8 kHz mu-law the playback buffer and the
// recording keep. The result is fresh, since the recording and the playback buffer keep
// it, except on a lean call without echo, which keeps neither: there it is c.pcm, reused.
func (c *Call) toMulaw(wire []byte) []byte {
	n := len(wire)
	if c.conv != nil {
		n = c.conv.mulawLen(len(wire))
	}
	var dst []byte
	if c.opts.Lean && c.opts.Echo == nil {
		if cap(c.pcm) < n {
			c.pcm = make([]byte, n)
		}
		dst = c.pcm[:n]
	} else {
		dst = make([]byte, n)
	}
	if c.conv == nil {
		copy(dst, wire)
		return dst
	}
	return c.conv.toMulaw(dst[:0], wire)
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
		c.log.Warn("protocol error from handset", "carrier", c.info.Name, "code", code, "detail", detail, "message", string(data[:min(len(data), maxQuote)]))
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
	if c.info.AudioOnly {
		for off := 0; off < len(mulaw); off += pieceBytes {
			if end, ok := c.replies.frame(mulaw[off:min(off+pieceBytes, len(mulaw))], now); ok {
				c.recordLocked(Event{Kind: ReplyEnded, End: end})
			}
		}
	}
	if !c.play.addAudio(now, mulaw) {
		c.protocolErrorLocked(c.info.OverflowCode, fmt.Sprintf("more than %v of audio buffered; %d bytes discarded", c.play.limit, len(mulaw)), nil)
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
	c.out = append(c.out, outItem{kind: outCleared})
	c.wakeWriter()
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
	c.out = append(c.out, outItem{kind: outMark, text: name, cleared: cleared})
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
// schedule start + n×frame (late frames are sent at once to catch up, never skipped).
func (c *Call) writeLoop() {
	defer c.exit()
	timer := c.clk.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var (
		frame    = make([]byte, audioBytes(c.info.Frame)) // the caller's audio, 8 kHz mu-law
		wire     []byte                                   // frame in the wire's format
		buf      = make([]byte, 0, 512+2*c.info.Format.Bytes(c.info.Frame))
		finished []*utterance
	)
	if c.conv != nil {
		wire = make([]byte, 0, c.conv.wireLen(len(frame)))
	}
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
		if c.opts.Silent {
			select {
			case <-c.wake:
			case <-c.ctx.Done():
				c.finish(Ending{Code: -1, Err: context.Cause(c.ctx)})
				return
			}
			continue
		}
		now := c.clk.Now()
		due := c.t0.Add(time.Duration(n) * c.info.Frame)
		if !now.Before(due) {
			at := due.Sub(c.t0)
			finished = finished[:0]
			for off := 0; off < len(frame); off += pieceBytes {
				finished = c.nextFrame(frame[off:off+pieceBytes], at+audioDuration(off), finished)
			}
			payload := frame
			if c.conv != nil {
				wire = c.conv.fromMulaw(wire[:0], frame)
				payload = wire
			}
			n++
			buf = c.wire.AppendMedia(buf[:0], payload, Frame{Chunk: n, At: at})
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
	switch it.kind {
	case outMark:
		return c.writeIf(c.wire.Mark(it.text, it.cleared))
	case outCleared:
		return c.writeIf(c.wire.Cleared())
	case outDTMF:
		if err := c.write(c.wire.DTMF(it.text)); err != nil {
			return err
		}
		c.record(Event{Kind: DTMFSent, Name: it.text})
	}
	return nil
}

// writeIf writes msg unless the wire has nothing to send (nil).
func (c *Call) writeIf(msg []byte) error {
	if msg == nil {
		return nil
	}
	return c.write(msg)
}

// hangup sends the wire's stop, if it has one, and closes the socket normally, as a
// carrier does when the caller hangs up.
func (c *Call) hangup() {
	var err error
	if stop := c.wire.Stop(); stop != nil {
		// Recorded as it goes out, not after: Handset answers stop by closing the socket, and
		// the reader can end the call (which closes the recording) before the write returns.
		c.record(Event{Kind: StopSent})
		err = c.write(stop)
	}
	if cerr := c.conn.Close(); cerr != nil {
		c.log.Debug("stream close handshake", "carrier", c.info.Name, "err", cerr)
	}
	e := Ending{Code: websocket.StatusNormalClosure}
	if err != nil {
		e.Err = fmt.Errorf("phone: send stop: %w", err)
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
