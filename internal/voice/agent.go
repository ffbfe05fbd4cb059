package voice

import "context"

// Role of a message in the conversation history.
type Role string

// Roles, as OpenAI-compatible runtimes name them.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one entry of a call's conversation history.
type Message struct {
	Role    Role
	Content string
}

// InterruptedMarker ends an assistant message the caller cut off, after the part they heard.
const InterruptedMarker = "[interrupted by caller]"

// TurnRequest is one caller turn handed to the agent runtime.
type TurnRequest struct {
	CallID CallID
	Turn   int
	// History is a snapshot of the conversation, ending with the caller's new message.
	// The agent owns it: the engine never changes a snapshot it handed out.
	History []Message
	// CallerHash identifies the caller without the number (empty when unknown).
	CallerHash string
	// Unseen is what happened on the line since the runtime last finished a turn, which a
	// runtime keeping the conversation itself has not been told: the agent's messages
	// Handset spoke for it (greeting, callback message, re-prompt), caller sentences whose
	// run never finished, and a reply the caller cut off, as the part they heard followed
	// by InterruptedMarker (or the marker alone when they heard none of it). Oldest first;
	// History's last message, the caller's new one, is not in it. Runtimes that are sent
	// History need nothing else; the others send Catchup.
	Unseen []Message
}

// ReplyChunk is one piece of a streaming reply.
type ReplyChunk struct {
	Text     string // text to speak; may be empty
	Progress string // the runtime is busy (a tool running): a short label, never spoken
	// Usage is the runtime's count of the turn's tokens so far, when this chunk brings one;
	// a later count replaces an earlier one.
	Usage Usage
}

// Usage is what a runtime reported a turn cost in tokens; zero where it reported nothing.
type Usage struct {
	InputTokens  int // the prompt: instructions, history and the caller's message
	OutputTokens int // the reply (and any tool calls the runtime made on the way)
}

// Reported reports whether the runtime gave any count.
func (u Usage) Reported() bool { return u.InputTokens > 0 || u.OutputTokens > 0 }

// Agent is an agent runtime. Safe for concurrent use.
type Agent interface {
	Name() string
	// Reply starts the turn. Cancelling ctx aborts it, including any remote run.
	Reply(ctx context.Context, req TurnRequest) (ReplyStream, error)
}

// ReplyStream reads one streaming reply.
type ReplyStream interface {
	// Next returns the next chunk, io.EOF when the reply is complete, or a *ProviderError.
	Next() (ReplyChunk, error)
	// Close releases the stream; after a cancel it also stops the remote run. Idempotent.
	Close() error
}
