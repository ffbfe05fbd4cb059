package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

// maxMessage bounds one message from the page: a second of audio is 32 KB.
const maxMessage = 64 << 10

// shown are the journal events the page needs for its transcript and state. The journal
// carries no raw numbers, so forwarding these reveals nothing the caller does not know.
var shown = map[string]bool{
	obs.VADSpeechStart: true, obs.VADSpeechEnd: true,
	obs.STTPartial: true, obs.STTFinal: true, obs.TurnCommit: true,
	obs.AgentRequest: true, obs.AgentProgress: true, obs.AgentDone: true, obs.AgentError: true,
	obs.TTSRequest: true, obs.PlayoutFirstAudio: true, obs.PlayoutDone: true,
	obs.Filler: true, obs.BargeIn: true, obs.TurnInterrupted: true, obs.CallEnd: true,
}

// Leg is one browser call's media socket.
type Leg struct {
	conn *websocket.Conn
	info voice.LegInfo

	events  chan []byte // journal events waiting for the socket
	dropped atomic.Int64
	// announced is closed once "ready" is on the socket: the call may start sending its
	// greeting before Run has written it, and the page must hear of the call first.
	announced chan struct{}

	mu      sync.Mutex // guards closing
	closing bool
}

var _ voice.Leg = (*Leg)(nil)

func newLeg(conn *websocket.Conn, info voice.LegInfo) *Leg {
	return &Leg{conn: conn, info: info, events: make(chan []byte, 256), announced: make(chan struct{})}
}

// Info describes the call.
func (l *Leg) Info() voice.LegInfo { return l.info }

// Observe queues a journal event for the page; called under the journal's lock, so it never
// blocks: when the page cannot keep up, events are dropped and counted.
func (l *Leg) Observe(e obs.Event) {
	if !shown[e.Type] {
		return
	}
	msg, err := json.Marshal(struct {
		Type  string    `json:"type"`
		Event obs.Event `json:"event"`
	}{"event", e})
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return
	}
	select {
	case l.events <- msg:
	default:
		l.dropped.Add(1)
	}
	if e.Type == obs.CallEnd {
		l.closing = true
		close(l.events) // the last event: the writer sends what is queued, then stops
	}
}

type inbound struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Digit string `json:"digit"`
}

// Run announces the call, forwards journal events, and reads the page until it hangs up.
func (l *Leg) Run(ctx context.Context, sink voice.LegSink) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		l.conn.Close(websocket.StatusNormalClosure, "call ended")
	}()
	ready, _ := json.Marshal(map[string]any{"type": "ready", "call": l.info.CallID, "rate": Format.Rate})
	if err := l.conn.Write(ctx, websocket.MessageText, ready); err != nil {
		return fmt.Errorf("browser: write: %w", err)
	}
	close(l.announced)
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.forwardEvents(ctx)
	}()

	frame := Format.FrameBytes()
	pending := make([]byte, 0, 2*frame) // audio not yet a whole 20 ms frame
	for {
		typ, msg, err := l.conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if websocket.CloseStatus(err) != -1 {
				return nil // the page closed the socket: the caller hung up
			}
			return fmt.Errorf("browser: read: %w", err)
		}
		if typ == websocket.MessageBinary {
			if len(msg)%2 != 0 {
				// The page sends whole 16-bit samples; half of one would shift every later
				// sample by a byte and turn the caller into noise.
				sink.Malformed(fmt.Errorf("browser: audio message of %d bytes is not whole samples", len(msg)))
				continue
			}
			pending = append(pending, msg...)
			n := 0
			for ; len(pending)-n >= frame; n += frame {
				sink.Audio(pending[n : n+frame])
			}
			pending = append(pending[:0], pending[n:]...)
			continue
		}
		var in inbound
		if err := json.Unmarshal(msg, &in); err != nil {
			sink.Malformed(fmt.Errorf("browser: %w", err))
			continue
		}
		switch in.Type {
		case "mark":
			sink.Mark(in.Name)
		case "dtmf":
			if len(in.Digit) == 1 && (in.Digit[0] >= '0' && in.Digit[0] <= '9' || in.Digit == "*" || in.Digit == "#") {
				sink.DTMF(in.Digit)
			} else {
				sink.Malformed(fmt.Errorf("browser: bad dtmf digit %q", voice.Clip(in.Digit, 8)))
			}
		case "hangup":
			return nil
		default:
			sink.Malformed(fmt.Errorf("browser: unknown message type %q", voice.Clip(in.Type, 40)))
		}
	}
}

// forwardEvents writes queued journal events until the call ends. After the call ends it
// still gets a moment to deliver call.end, so the page can say why.
func (l *Leg) forwardEvents(ctx context.Context) {
	for {
		select {
		case msg, ok := <-l.events:
			if !ok {
				return
			}
			if l.conn.Write(ctx, websocket.MessageText, msg) != nil {
				return
			}
		case <-ctx.Done():
			l.flushEvents()
			return
		}
	}
}

// flushEvents sends what is already queued (call.end among it), briefly.
func (l *Leg) flushEvents() {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	for {
		select {
		case msg, ok := <-l.events:
			if !ok || l.conn.Write(ctx, websocket.MessageText, msg) != nil {
				return
			}
		default:
			return
		}
	}
}

// SendAudio sends agent audio (PCM16 at 16 kHz) as one binary message.
func (l *Leg) SendAudio(ctx context.Context, pcm []byte) error {
	return l.write(ctx, websocket.MessageBinary, pcm)
}

// SendMark asks the page to echo name once everything sent before it has played.
func (l *Leg) SendMark(ctx context.Context, name string) error {
	msg, _ := json.Marshal(map[string]string{"type": "mark", "name": name})
	return l.write(ctx, websocket.MessageText, msg)
}

// Clear drops the audio the page has queued; it echoes the pending marks at once.
func (l *Leg) Clear(ctx context.Context) error {
	return l.write(ctx, websocket.MessageText, []byte(`{"type":"clear"}`))
}

func (l *Leg) write(ctx context.Context, typ websocket.MessageType, msg []byte) error {
	select {
	case <-l.announced:
	case <-ctx.Done():
		return fmt.Errorf("browser: write before the call was announced: %w", ctx.Err())
	}
	if err := l.conn.Write(ctx, typ, msg); err != nil {
		return fmt.Errorf("browser: write: %w", err)
	}
	return nil
}

// Dropped counts journal events the page was too slow to take.
func (l *Leg) Dropped() int64 { return l.dropped.Load() }
