package fakedeepgram

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"math"
	"time"

	"github.com/coder/websocket"
)

// idleReason is the close reason of the NET-0001 idle timeout (close code 1011).
const idleReason = "NET-0001: Deepgram did not receive audio data or a text message within the timeout window."

// outMsg is one message for a connection's writer goroutine.
type outMsg struct {
	data   []byte
	close  bool // close the socket with code and reason instead of writing data
	drop   bool // drop the socket abruptly (the fault), after the messages before it
	code   websocket.StatusCode
	reason string
}

// cause says why a final result is sent.
type cause uint8

const (
	causeEndpoint cause = iota // EndSilence of silence: speech_final
	causeFinalize              // the client sent Finalize: from_finalize
	causeClose                 // the client sent CloseStream: a plain is_final flush
)

// conn is the state of one accepted connection, owned by its reader (the handler goroutine).
type conn struct {
	s     *Server
	ws    *websocket.Conn
	rec   *ConnStats
	p     params
	det   *detector
	evs   []event
	sha   hash.Hash
	out   chan<- outMsg
	wdone <-chan struct{}
	ctx   context.Context
	meta  resultsMeta
	texts []string     // the text of each of evs' results, for emitAll
	rbuf  bytes.Buffer // the message being read, reused
}

// maxKeptReadBuf bounds the read buffer kept between messages.
const maxKeptReadBuf = 64 << 10

// serveConn runs one connection: this goroutine reads, a second one writes.
func (s *Server) serveConn(parent context.Context, ws *websocket.Conn, rec *ConnStats, p params) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	// out feeds the writer. When it is full the reader waits (selecting on ctx), so a client
	// that stops reading its socket also stops the fake reading audio, as TCP would.
	out := make(chan outMsg, 32)
	// activity tells the writer (which owns the idle timer) that a message arrived; a full
	// channel already says so, so sends never wait.
	activity := make(chan struct{}, 1)
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		s.writeLoop(ctx, ws, rec, out, activity)
	}()

	c := &conn{
		s: s, ws: ws, rec: rec, p: p, det: newDetector(p, s.opts), sha: sha256.New(),
		out: out, wdone: wdone, ctx: ctx,
		meta: resultsMeta{RequestID: rec.RequestID, ModelInfo: newModelInfo(p.model), ModelUUID: fakeModelUUID},
	}
	if !c.readLoop(activity) {
		cancel() // the socket failed: stop the writer now
	}
	<-wdone
	_ = ws.CloseNow()
}

func newModelInfo(model string) modelInfo {
	return modelInfo{Name: "general-" + model, Version: "fake", Arch: model}
}

// writeLoop writes queued messages in order and enforces the idle timeout.
func (s *Server) writeLoop(ctx context.Context, ws *websocket.Conn, rec *ConnStats, out <-chan outMsg, activity <-chan struct{}) {
	var idle <-chan time.Time // nil (never ready) when the timeout is disabled
	var timer *time.Timer
	if s.opts.IdleTimeout > 0 {
		timer = time.NewTimer(s.opts.IdleTimeout)
		defer timer.Stop()
		idle = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			_ = ws.CloseNow()
			return
		case <-activity:
			if timer != nil {
				timer.Reset(s.opts.IdleTimeout)
			}
		case <-idle:
			s.update(func() { rec.IdleClosed = true; s.totals.IdleClosed++ })
			_ = ws.Close(websocket.StatusInternalError, idleReason)
			return
		case m := <-out:
			if !s.write(ctx, ws, m) {
				return
			}
		}
	}
}

// write sends m; it reports whether the writer should go on.
func (s *Server) write(ctx context.Context, ws *websocket.Conn, m outMsg) bool {
	if m.drop {
		_ = ws.CloseNow() // abrupt: no close frame, as when a network path dies
		return false
	}
	if m.close {
		_ = ws.Close(m.code, m.reason)
		return false
	}
	if err := ws.Write(ctx, websocket.MessageText, m.data); err != nil {
		_ = ws.CloseNow()
		return false
	}
	return true
}

// read is ws.Read into c.rbuf, so audio messages are not each a new slice: the data is
// valid until the next read.
func (c *conn) read() (websocket.MessageType, []byte, error) {
	if c.rbuf.Cap() > maxKeptReadBuf {
		c.rbuf = bytes.Buffer{}
	}
	typ, r, err := c.ws.Reader(c.ctx)
	if err != nil {
		return 0, nil, err
	}
	c.rbuf.Reset()
	_, err = c.rbuf.ReadFrom(r)
	return typ, c.rbuf.Bytes(), err
}

// readLoop handles client messages until the socket ends. It returns true when the writer
// has been told how to end the socket (CloseStream, the drop fault) and should be awaited.
func (c *conn) readLoop(activity chan<- struct{}) bool {
	for {
		typ, data, err := c.read()
		if err != nil {
			return false
		}
		select {
		case activity <- struct{}{}:
		default:
		}
		if typ == websocket.MessageBinary {
			if dropped, ok := c.audio(data); dropped || !ok {
				return dropped
			}
			continue
		}
		var m controlMsg
		if err := json.Unmarshal(data, &m); err != nil {
			c.s.log.Debug("fakedeepgram: unreadable text message ignored", "conn", c.rec.ID, "err", err)
			continue
		}
		switch m.Type {
		case "KeepAlive":
			c.s.update(func() { c.rec.KeepAlives++ })
		case "Finalize":
			c.s.update(func() { c.rec.Finalizes++ })
			c.evs = c.det.flush(c.evs[:0], causeFinalize)
			if !c.emitAll(causeFinalize) {
				return false
			}
		case "CloseStream":
			c.s.update(func() { c.rec.CloseStreams++ })
			c.evs = c.det.flush(c.evs[:0], causeClose)
			if !c.emitAll(causeClose) {
				return false
			}
			return c.send(outMsg{data: c.metadata()}) &&
				c.send(outMsg{close: true, code: websocket.StatusNormalClosure})
		default:
			c.s.log.Debug("fakedeepgram: unknown control message ignored", "conn", c.rec.ID, "type", m.Type)
		}
	}
}

// audio handles one binary message. dropped means the fault fired: the writer sends what
// was already produced and then drops the socket. ok is false when the writer is gone.
func (c *conn) audio(data []byte) (dropped, ok bool) {
	drop := false
	c.s.update(func() {
		c.rec.AudioBytes += int64(len(data))
		c.rec.AudioMessages++
		c.s.totals.AudioBytes += int64(len(data))
		if c.s.dropAfter > 0 && c.rec.AudioBytes >= c.s.dropAfter {
			c.s.dropAfter = 0
			c.rec.Dropped = true
			c.s.totals.Dropped++
			drop = true
		}
	})
	if drop {
		return true, c.send(outMsg{drop: true})
	}
	c.sha.Write(data)
	c.evs = c.det.feed(data, c.evs[:0])
	return false, c.emitAll(causeEndpoint)
}

// emitAll sends a message for each detector event; false means the writer is gone. The
// results' texts are chosen in order and recorded, with the detector's utterances, before
// the first message goes out, so Stats already describes what the client receives.
func (c *conn) emitAll(why cause) bool {
	c.texts = c.texts[:0]
	for _, ev := range c.evs {
		text := ""
		switch {
		case ev.kind == evInterim && c.p.interim:
			text = firstHalf(c.s.nextLine(c.p.tag, false))
		case ev.kind == evFinal:
			text = c.s.nextLine(c.p.tag, true)
			c.det.setText(ev.utt, text)
		}
		c.texts = append(c.texts, text)
	}
	lean := c.s.opts.Lean
	from, utts := c.det.changed()
	if len(c.evs) > 0 || (len(utts) > 0 && !lean) {
		c.s.update(func() {
			t := &c.s.totals
			for i, ev := range c.evs {
				switch {
				case ev.kind == evInterim && c.p.interim:
					t.Interims++
					if !lean {
						c.rec.Interims = append(c.rec.Interims, c.texts[i])
					}
				case ev.kind == evFinal:
					t.Finals++
					if !lean {
						c.rec.Transcripts = append(c.rec.Transcripts, c.texts[i])
					}
				case ev.kind == evUtteranceEnd && c.p.utteranceEndMS != 0:
					t.UtteranceEnds++
					c.rec.UtteranceEnd++
				}
			}
			if !lean {
				c.rec.Utterances = append(c.rec.Utterances[:from], utts...)
			}
		})
	}
	if lean {
		c.det.forget()
	}
	for i, ev := range c.evs {
		var msg []byte
		switch ev.kind {
		case evSpeechStarted:
			if !c.p.vadEvents {
				continue
			}
			msg = mustJSON(speechStartedMsg{Type: "SpeechStarted", Channel: []int{0}, Timestamp: c.secs(ev.start)})
		case evInterim:
			if !c.p.interim {
				continue
			}
			msg = c.results(ev, c.texts[i], false, false, false)
		case evFinal:
			msg = c.results(ev, c.texts[i], true, why == causeEndpoint, why == causeFinalize)
		case evEmptyFinal:
			msg = c.results(ev, "", true, false, true)
		case evUtteranceEnd:
			if c.p.utteranceEndMS == 0 {
				continue
			}
			msg = mustJSON(utteranceEndMsg{Type: "UtteranceEnd", Channel: []int{0, 1}, LastWordEnd: c.secs(ev.wordsEnd)})
		}
		if !c.send(outMsg{data: msg}) {
			return false
		}
	}
	return true
}

func (c *conn) results(ev event, text string, isFinal, speechFinal, fromFinalize bool) []byte {
	start, end := c.secs(ev.start), c.secs(ev.end)
	conf := 0.0
	if text != "" {
		conf = 0.98
	}
	return mustJSON(resultsMsg{
		Type:         "Results",
		ChannelIndex: []int{0, 1},
		Start:        start,
		Duration:     math.Round((end-start)*1000) / 1000,
		IsFinal:      isFinal,
		SpeechFinal:  speechFinal,
		FromFinalize: fromFinalize,
		Channel: channel{Alternatives: []alternative{{
			Transcript: text,
			Confidence: conf,
			Words:      buildWords(text, start, c.secs(ev.wordsEnd)),
		}}},
		Metadata: c.meta,
	})
}

func (c *conn) metadata() []byte {
	return mustJSON(metadataMsg{
		Type:           "Metadata",
		TransactionKey: "deprecated",
		RequestID:      c.rec.RequestID,
		SHA256:         hex.EncodeToString(c.sha.Sum(nil)),
		Created:        time.Now().UTC().Format(time.RFC3339Nano),
		Duration:       c.secs(c.det.pos + int64(len(c.det.block))),
		Channels:       1,
		Models:         []string{fakeModelUUID},
		ModelInfo:      map[string]modelInfo{fakeModelUUID: c.meta.ModelInfo},
	})
}

func (c *conn) secs(samples int64) float64 { return secs(samples, c.p.rate) }

// send hands m to the writer, waiting while its queue is full; false means it is gone.
func (c *conn) send(m outMsg) bool {
	select {
	case c.out <- m:
		return true
	case <-c.wdone:
		return false
	case <-c.ctx.Done():
		return false
	}
}
