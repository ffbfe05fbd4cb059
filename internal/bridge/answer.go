package bridge

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// answer writes one turn's reply as OpenAI's API does: a stream of chat.completion.chunk
// events ending in [DONE], or one chat.completion.
type answer struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	id, model string
	created   int64
	stream    bool
	withUsage bool // stream_options.include_usage: a last chunk with the usage
	committed bool // the stream's 200 and first chunk are out
	whole     strings.Builder
	frame     bytes.Buffer  // the event being written, its memory kept for the next
	enc       *json.Encoder // writes into frame
}

// writeGrace is how long one write to the client may take. A turn may run for minutes (a
// tool), past the server's write timeout, which counts from the request: each write sets
// its own deadline instead, so a client that stops reading is still let go.
const writeGrace = 30 * time.Second

func newAnswer(w http.ResponseWriter, model string, stream, withUsage bool) *answer {
	a := &answer{w: w, rc: http.NewResponseController(w), id: "chatcmpl-" + randomID(), model: model,
		created: time.Now().Unix(), stream: stream, withUsage: withUsage}
	a.enc = json.NewEncoder(&a.frame)
	return a
}

// write sends b, within writeGrace, and flushes it.
func (a *answer) write(b []byte) {
	_ = a.rc.SetWriteDeadline(time.Now().Add(writeGrace))
	_, _ = a.w.Write(b)
	_ = a.rc.Flush()
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func usageOf(u voice.Usage) usage {
	return usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
}

// commit sends a stream's headers and its first chunk (the assistant's role), once.
func (a *answer) commit() {
	if !a.stream || a.committed {
		return
	}
	a.committed = true
	h := a.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold the stream back
	a.w.WriteHeader(http.StatusOK)
	a.event(a.chunk(delta{Role: string(voice.RoleAssistant)}, nil))
}

// keepalive tells a waiting client the stream is alive: an SSE comment, which every
// client skips.
func (a *answer) keepalive() {
	if !a.stream {
		return
	}
	a.commit()
	a.write([]byte(": keepalive\n\n"))
}

// text sends a piece of the reply (or keeps it, for a whole answer).
func (a *answer) text(s string) {
	if !a.stream {
		a.whole.WriteString(s)
		return
	}
	a.commit()
	a.event(a.chunk(delta{Content: s}, nil))
}

// finish ends a complete reply.
func (a *answer) finish(u voice.Usage) {
	stop := "stop"
	if !a.stream {
		_ = a.rc.SetWriteDeadline(time.Now().Add(writeGrace))
		writeJSON(a.w, http.StatusOK, map[string]any{
			"id": a.id, "object": "chat.completion", "created": a.created, "model": a.model,
			"choices": []map[string]any{{"index": 0, "finish_reason": stop,
				"message": map[string]string{"role": string(voice.RoleAssistant), "content": a.whole.String()}}},
			"usage": usageOf(u),
		})
		return
	}
	a.commit()
	a.event(a.chunk(delta{}, &stop))
	if a.withUsage {
		c := a.chunk(delta{}, nil)
		c.Choices = []chunkChoice{}
		uu := usageOf(u)
		c.Usage = &uu
		a.event(c)
	}
	a.write([]byte("data: [DONE]\n\n"))
}

// fail ends the answer with the runtime's failure as an OpenAI-shaped error: the whole
// answer before anything was sent, or an error event (which OpenAI's clients raise as an
// error) once the stream has begun.
func (a *answer) fail(runtimeErr error) {
	e := runtimeError(runtimeErr)
	if !a.committed {
		_ = a.rc.SetWriteDeadline(time.Now().Add(writeGrace))
		e.write(a.w)
		return
	}
	a.event(struct {
		Error apiError `json:"error"`
	}{e})
}

func (a *answer) chunk(d delta, finish *string) chunk {
	return chunk{ID: a.id, Object: "chat.completion.chunk", Created: a.created, Model: a.model,
		Choices: []chunkChoice{{Delta: d, FinishReason: finish}}}
}

// event writes v as one SSE data event and flushes it.
func (a *answer) event(v any) {
	a.frame.Reset()
	a.frame.WriteString("data: ")
	_ = a.enc.Encode(v) // ends the JSON with the first of the two newlines
	a.frame.WriteByte('\n')
	a.write(a.frame.Bytes())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
