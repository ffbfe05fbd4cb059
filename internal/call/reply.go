package call

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/handset-voice/handset/internal/voice"
)

// reply is one turn of agent speech: an optional agent stream cut into sentences, and a
// speaker that synthesises each sentence and queues its audio, with a mark after each
// sentence so the carrier tells us exactly what the caller heard. Both goroutines stop
// when the reply's context is cancelled (barge-in, hang-up); the last of them to stop
// cancels it too, so a reply that ran its course lets go of its context rather than
// leaving it among the call's for the rest of the call.
type reply struct {
	turn    int
	ctx     context.Context
	cancel  context.CancelFunc
	queue   sentenceQueue
	running atomic.Int32
}

// runReply starts f as one of the reply's goroutines.
func (c *Call) runReply(r *reply, name string, f func()) {
	r.running.Add(1)
	c.goSafe(name, func() {
		defer r.release()
		f()
	})
}

// release ends one holder of the reply's context; the last cancels it.
func (r *reply) release() {
	if r.running.Add(-1) == 0 {
		r.cancel()
	}
}

// sentenceKind says where a sentence comes from, which decides how it is spoken.
type sentenceKind uint8

const (
	sentenceReply   sentenceKind = iota // the agent's words: heard-prefix segments
	sentenceMessage                     // greeting or re-prompt: also kept in history
	sentenceError                       // the error message: plays, not history
	sentenceFiller                      // the long-turn filler: only before the reply starts
	sentenceNotice                      // the recording notice: plays whole, not history (notice.go)
)

type sentence struct {
	text string
	kind sentenceKind
}

// sentenceQueue hands sentences from the agent reader (and the engine, for messages) to
// the speaker. It is bounded by the reply text the agent produced.
type sentenceQueue struct {
	mu     sync.Mutex // guards following
	items  []sentence
	closed bool
	signal chan struct{}
}

func (q *sentenceQueue) push(kind sentenceKind, texts ...string) {
	q.mu.Lock()
	if !q.closed {
		for _, t := range texts {
			q.items = append(q.items, sentence{text: t, kind: kind})
		}
	}
	q.mu.Unlock()
	q.notify()
}

// pushFront queues a filler ahead of reply sentences the speaker has not taken yet.
func (q *sentenceQueue) pushFront(s sentence) {
	q.mu.Lock()
	if !q.closed {
		q.items = append([]sentence{s}, q.items...)
	}
	q.mu.Unlock()
	q.notify()
}

// close ends the queue after what is already in it.
func (q *sentenceQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.notify()
}

func (q *sentenceQueue) notify() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// next blocks for the next sentence; ok is false once the queue is closed and empty.
func (q *sentenceQueue) next(ctx context.Context) (sentence, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			s := q.items[0]
			q.items = q.items[1:]
			q.mu.Unlock()
			return s, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return sentence{}, false
		}
		select {
		case <-ctx.Done():
			return sentence{}, false
		case <-q.signal:
		}
	}
}

// startReply begins speaking turn: from the agent when req is set, or the fixed message.
// The engine closes the queue once the agent is done (or failed).
func (c *Call) startReply(turn int, req *voice.TurnRequest, fixed ...string) *reply {
	return c.beginReply(turn, req, req == nil, sentenceMessage, fixed...)
}

// beginReply starts turn's reply with texts of kind queued; closed: nothing more will be
// (else the agent, or the engine, closes the queue).
func (c *Call) beginReply(turn int, req *voice.TurnRequest, closed bool, kind sentenceKind, texts ...string) *reply {
	ctx, cancel := context.WithCancel(c.ctx)
	r := &reply{turn: turn, ctx: ctx, cancel: cancel}
	r.queue.signal = make(chan struct{}, 1)
	r.queue.push(kind, texts...)
	if closed {
		r.queue.close()
	}
	// Both are counted before either starts, so the first to finish cannot cancel the
	// context under the other.
	r.running.Add(1)
	if req != nil {
		c.runReply(r, "agent", func() { c.readAgent(r, *req) })
	}
	c.runReply(r, "speaker", func() { c.speak(r) })
	r.release()
	return r
}

// errTurnTimeout is the cause of an agent context cancelled by the turn limit.
var errTurnTimeout = errors.New("turn timeout")

// readAgent streams the agent's reply into sentences. The whole turn is bounded by
// AgentTurnTimeout on the call's clock, the same for every runtime: when it runs out the
// agent's context is cancelled, which aborts the run (every runtime stops its remote run
// on cancel), and the turn fails as a timeout while what was already said plays on.
func (c *Call) readAgent(r *reply, req voice.TurnRequest) {
	ctx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	if limit := c.cfg.AgentTurnTimeout; limit > 0 {
		t := c.deps.Clock.AfterFunc(limit, func() { cancel(errTurnTimeout) })
		defer t.Stop()
	}
	// failed reports err, or the turn limit when that is what ended the stream.
	failed := func(err error, partial string) {
		if context.Cause(ctx) == errTurnTimeout && r.ctx.Err() == nil {
			err = &voice.ProviderError{Provider: c.deps.Agent.Name(), Op: "turn", Kind: voice.KindTimeout,
				Err: fmt.Errorf("the turn took longer than %v overall; the run was aborted", c.cfg.AgentTurnTimeout)}
		}
		c.post(agentFailed{turn: r.turn, err: err, partial: partial})
	}
	stream, err := c.deps.Agent.Reply(ctx, req)
	if err != nil {
		failed(err, "")
		return
	}
	defer stream.Close()
	var chunker sentenceChunker
	var full strings.Builder
	var usage voice.Usage // the runtime's latest count, if it gives one
	first := true
	for {
		chunk, err := stream.Next()
		if errors.Is(err, io.EOF) {
			if rest := chunker.Flush(); rest != "" {
				r.queue.push(sentenceReply, rest)
			}
			c.post(agentDone{turn: r.turn, text: strings.TrimSpace(full.String()), usage: usage})
			return
		}
		if err != nil {
			failed(err, full.String())
			return
		}
		if chunk.Usage.Reported() {
			usage = chunk.Usage
		}
		if chunk.Progress != "" {
			c.post(agentProgress{turn: r.turn, label: chunk.Progress})
		}
		if chunk.Text == "" {
			continue
		}
		if first {
			first = false
			c.post(agentFirstToken{turn: r.turn})
		}
		full.WriteString(chunk.Text)
		if s := chunker.Add(chunk.Text); len(s) > 0 {
			r.queue.push(sentenceReply, s...)
		}
	}
}
