package hermes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// stepKind is what one stream event means for the reply.
type stepKind uint8

const (
	stepIgnore    stepKind = iota
	stepText               // Text is a piece of the reply
	stepProgress           // Text is a tool label: the runtime is busy
	stepDone               // the reply is complete; Output may carry the whole text
	stepFailed             // Text is the runtime's error message
	stepCancelled          // the run was cancelled
	stepEnd                // chat's "[DONE]"
)

// step is one parsed event.
type step struct {
	Kind   stepKind
	Text   string
	Output string // runs: the whole reply (used when no delta came)
	Tail   string // chat: text carried by the finishing chunk
	Usage  int    // total tokens reported (input + output when no total); 0 = none or zero
	Tokens voice.Usage
}

// usageJSON covers both the runs (input/output) and chat (prompt/completion) names.
type usageJSON struct {
	Input      int `json:"input_tokens"`
	Output     int `json:"output_tokens"`
	Total      int `json:"total_tokens"`
	Prompt     int `json:"prompt_tokens"`
	Completion int `json:"completion_tokens"`
}

// tokens is the count as a turn's usage: input and output, whichever names Hermes used.
func (u *usageJSON) tokens() voice.Usage {
	if u == nil {
		return voice.Usage{}
	}
	return voice.Usage{InputTokens: max(u.Input+u.Prompt, 0), OutputTokens: max(u.Output+u.Completion, 0)}
}

func (u *usageJSON) sum() int {
	if u == nil {
		return 0
	}
	if u.Total > 0 {
		return u.Total
	}
	return u.Input + u.Output + u.Prompt + u.Completion
}

// runEventJSON is one frame of GET /v1/runs/{id}/events; the name is in "event".
type runEventJSON struct {
	Event   string          `json:"event"`
	Delta   *string         `json:"delta"`
	Tool    string          `json:"tool"`
	Preview string          `json:"preview"`
	Label   string          `json:"label"`
	Status  string          `json:"status"`
	Output  *string         `json:"output"`
	Usage   *usageJSON      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// parseRunEvent reads one runs event. name is the SSE event name, used when the JSON has no
// "event" field. Unknown events are stepIgnore, never errors: Hermes adds events often.
func parseRunEvent(name string, data []byte) (step, error) {
	var ev runEventJSON
	if err := json.Unmarshal(data, &ev); err != nil {
		return step{}, fmt.Errorf("run event: %w", err)
	}
	if ev.Event == "" {
		ev.Event = name
	}
	switch ev.Event {
	case "message.delta":
		if ev.Delta == nil || *ev.Delta == "" {
			return step{}, nil
		}
		return step{Kind: stepText, Text: *ev.Delta}, nil
	case "tool.started", "hermes.tool.progress", "tool.progress", "subagent.start":
		if strings.HasPrefix(ev.Tool, "_") || (ev.Status != "" && ev.Status != "running" && ev.Status != "started") {
			return step{}, nil
		}
		return step{Kind: stepProgress, Text: toolLabel(ev.Label, ev.Preview, ev.Tool)}, nil
	case "run.completed":
		s := step{Kind: stepDone, Usage: ev.Usage.sum(), Tokens: ev.Usage.tokens()}
		if ev.Output != nil {
			s.Output = *ev.Output
		}
		return s, nil
	case "run.failed":
		return step{Kind: stepFailed, Text: errorText(ev.Error)}, nil
	case "run.cancelled", "run.interrupted":
		return step{Kind: stepCancelled}, nil
	}
	return step{}, nil
}

// toolLabel picks a short label for a running tool.
func toolLabel(candidates ...string) string {
	for _, c := range candidates {
		if c = strings.TrimSpace(c); c != "" {
			if r := []rune(c); len(r) > 80 {
				c = string(r[:80])
			}
			return c
		}
	}
	return "working"
}

// errorText reads an error given as a string or as {"message": ...}.
func errorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	return "run failed (no error message)"
}

// chatChunkJSON is one chat.completion.chunk (or a whole chat.completion).
type chatChunkJSON struct {
	Choices []struct {
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageJSON      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// parseChatEvent reads one event of a streaming chat completion.
func parseChatEvent(name string, data []byte) (step, error) {
	switch name {
	case "hermes.tool.progress":
		return parseRunEvent(name, data)
	case "", "message":
	default:
		return step{}, nil // unknown named events are ignored
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
		return step{Kind: stepEnd}, nil
	}
	var c chatChunkJSON
	if err := json.Unmarshal(data, &c); err != nil {
		return step{}, fmt.Errorf("chat chunk: %w", err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return step{Kind: stepFailed, Text: errorText(c.Error)}, nil
	}
	if len(c.Choices) == 0 {
		if c.Usage != nil {
			return step{Kind: stepDone, Usage: c.Usage.sum(), Tokens: c.Usage.tokens()}, nil
		}
		return step{}, nil
	}
	ch := c.Choices[0]
	text := ""
	if ch.Delta.Content != nil {
		text = *ch.Delta.Content
	} else if ch.Message.Content != nil {
		text = *ch.Message.Content
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		switch *ch.FinishReason {
		case "error", "length":
			return step{Kind: stepFailed, Text: "reply ended with finish_reason " + *ch.FinishReason}, nil
		}
		return step{Kind: stepDone, Tail: text, Usage: c.Usage.sum(), Tokens: c.Usage.tokens()}, nil
	}
	if text == "" {
		return step{}, nil
	}
	return step{Kind: stepText, Text: text}, nil
}
