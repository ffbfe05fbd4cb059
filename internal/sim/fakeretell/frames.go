package fakeretell

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// clockSlack bounds how far a ping_pong timestamp that echoes none of the fake's pings may
// be from the fake's clock and still pass as the server's own send time.
const clockSlack = 30 * time.Second

// readLoop reads the server's events until the connection ends.
func (c *Call) readLoop() {
	defer c.wg.Done()
	defer close(c.done)
	defer c.cancel() // stops the pinger
	for {
		typ, data, err := c.conn.Read(c.ctx)
		if err != nil {
			c.mu.Lock()
			if !c.closing {
				c.readErr = err
			}
			c.ended = true
			c.broadcastLocked()
			c.mu.Unlock()
			return
		}
		if typ != websocket.MessageText {
			c.note("binary frame of %d bytes: Retell takes JSON text frames only", len(data))
			continue
		}
		c.handle(data)
	}
}

// handle checks one frame from the server and acts on it.
func (c *Call) handle(data []byte) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(data, &f); err != nil || f == nil {
		c.note("not a JSON object: %s", clip(data))
		return
	}
	raw, ok := f["response_type"]
	if !ok {
		c.note("frame without response_type: %s", clip(data))
		return
	}
	var typ string
	if err := json.Unmarshal(raw, &typ); err != nil {
		c.note("response_type is not a string: %s", clip(data))
		return
	}
	c.mu.Lock()
	c.received[typ] = append(c.received[typ], data)
	c.broadcastLocked()
	c.mu.Unlock()

	switch typ {
	case "config":
		c.onConfig(f)
	case "response":
		c.onResponse(f, data)
	case "ping_pong":
		c.onPong(f)
	case "agent_interrupt":
		c.check(typ, f, "interrupt_id:int", "content:string", "content_complete:bool",
			"no_interruption_allowed?:bool", "end_call?:bool", "transfer_number?:string", "digit_to_press?:string")
	case "update_agent":
		c.check(typ, f, "agent_config:object")
	case "metadata":
		c.check(typ, f, "metadata:object")
	case "tool_call_invocation":
		if c.check(typ, f, "tool_call_id:string", "name:string", "arguments:string") {
			var args string
			_ = json.Unmarshal(f["arguments"], &args)
			if !json.Valid([]byte(args)) {
				c.note("tool_call_invocation: arguments is not stringified JSON: %q", args)
			}
		}
	case "tool_call_result":
		c.check(typ, f, "tool_call_id:string", "content:string", "successful?:bool")
	default:
		c.note("unknown response_type %q", typ)
	}
}

func (c *Call) onConfig(f map[string]json.RawMessage) {
	if !c.check("config", f, "config:object") {
		return
	}
	var inner map[string]json.RawMessage
	_ = json.Unmarshal(f["config"], &inner)
	if !c.check("config", inner, "auto_reconnect?:bool", "call_details?:bool", "transcript_with_tool_calls?:bool") {
		return
	}
	var cfg Config
	_ = json.Unmarshal(f["config"], &cfg)

	c.mu.Lock()
	c.config = &cfg
	sendDetails := cfg.CallDetails && !c.detailsSent
	c.detailsSent = c.detailsSent || sendDetails
	startPings := cfg.AutoReconnect && !c.pinging && !c.closing
	if startPings {
		c.pinging = true
		c.lastPong = time.Now() // the server has PongTimeout from now
		c.wg.Add(1)
	}
	c.broadcastLocked()
	c.mu.Unlock()

	if sendDetails {
		// An error means the connection is going; the read loop will see it.
		_ = c.send(c.ctx, map[string]any{"interaction_type": "call_details", "call": c.callObject()})
	}
	if startPings {
		go c.pingLoop()
	}
}

// callObject is the call as Retell's Register Call API returns it.
func (c *Call) callObject() map[string]any {
	metadata, vars := c.opts.Metadata, c.opts.DynamicVariables
	if metadata == nil {
		metadata = map[string]any{}
	}
	if vars == nil {
		vars = map[string]string{}
	}
	call := map[string]any{
		"call_id":                      c.id,
		"agent_id":                     c.opts.AgentID,
		"call_type":                    "web_call",
		"call_status":                  "registered",
		"metadata":                     metadata,
		"retell_llm_dynamic_variables": vars,
	}
	if c.opts.From != "" || c.opts.To != "" {
		call["call_type"] = "phone_call"
		call["from_number"] = c.opts.From
		call["to_number"] = c.opts.To
	}
	if c.opts.Direction != "" {
		call["direction"] = c.opts.Direction
	}
	return call
}

func (c *Call) onResponse(f map[string]json.RawMessage, data []byte) {
	// Retell drops a response whose fields have the wrong types; so does the fake.
	if !c.check("response", f, "response_id:int", "content:string", "content_complete:bool",
		"end_call?:bool", "no_interruption_allowed?:bool", "transfer_number?:string",
		"show_transferee_as_caller?:bool", "digit_to_press?:string") {
		return
	}
	var ev struct {
		ID       int    `json:"response_id"`
		Content  string `json:"content"`
		Complete bool   `json:"content_complete"`
		EndCall  *bool  `json:"end_call"`
	}
	_ = json.Unmarshal(data, &ev) // checked above; a null optional field leaves its zero value

	c.mu.Lock()
	defer c.mu.Unlock()
	r, asked := c.replies[ev.ID]
	switch {
	case !asked:
		c.noteLocked("response %d: never asked for (latest is %d)", ev.ID, c.latest)
		return
	case r.complete:
		c.noteLocked("response %d: content after content_complete: %q", ev.ID, ev.Content)
		return
	}
	if ev.ID > 0 && c.replies[0].frames == 0 {
		c.noteLocked("response %d before the begin message (response 0)", ev.ID)
	}
	r.frames++
	if ev.ID < c.latest {
		r.stale++ // Retell drops it: the user has spoken since
		c.broadcastLocked()
		return
	}
	if n := utf8.RuneCountInString(ev.Content); n > 0 {
		r.text += ev.Content
		r.deltas = append(r.deltas, delta{at: time.Now(), runes: n})
	}
	r.complete = ev.Complete
	if ev.EndCall != nil && *ev.EndCall {
		r.endCall = true
	}
	c.broadcastLocked()
}

func (c *Call) onPong(f map[string]json.RawMessage) {
	if !c.check("ping_pong", f, "timestamp:int") {
		return
	}
	var ts int64
	_ = json.Unmarshal(f["timestamp"], &ts)
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastPong = now
	c.pongLate = false
	if off := now.UnixMilli() - ts; !c.pings[ts] && (off > clockSlack.Milliseconds() || -off > clockSlack.Milliseconds()) {
		c.noteLocked("ping_pong: timestamp %d is neither a ping's nor a time in ms near now (%d)", ts, now.UnixMilli())
	}
}

// pingLoop sends ping_pong events and watches for the server's.
func (c *Call) pingLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.opts.PingEvery)
	defer t.Stop()
	for {
		now := time.Now()
		c.mu.Lock()
		if gap := now.Sub(c.lastPong); gap > c.opts.PongTimeout && !c.pongLate {
			c.pongLate = true
			c.missedPongs++
			c.noteLocked("no ping_pong from the server for %v (Retell redials after %v)",
				gap.Round(time.Millisecond), c.opts.PongTimeout)
		}
		ts := now.UnixMilli()
		c.pings[ts] = true
		c.mu.Unlock()
		if c.send(c.ctx, map[string]any{"interaction_type": "ping_pong", "timestamp": ts}) != nil {
			return
		}
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// check records a violation for each field of f that is missing or of the wrong JSON type,
// and reports whether all were right. A spec is "name:kind" with kind int, string, bool or
// object; "name?:kind" is optional, and then null is allowed too (as pydantic sends it).
func (c *Call) check(typ string, f map[string]json.RawMessage, specs ...string) bool {
	ok := true
	for _, spec := range specs {
		name, kind, _ := strings.Cut(spec, ":")
		name, optional := strings.CutSuffix(name, "?")
		raw, present := f[name]
		switch {
		case optional && (!present || bytes.Equal(raw, []byte("null"))):
		case !present:
			c.note("%s: missing %s", typ, name)
			ok = false
		case !isKind(raw, kind):
			c.note("%s: %s is %s, want a JSON %s", typ, name, clip(raw), kind)
			ok = false
		}
	}
	return ok
}

func isKind(raw json.RawMessage, kind string) bool {
	if bytes.Equal(raw, []byte("null")) {
		return false
	}
	var err error
	switch kind {
	case "int":
		var n int64
		err = json.Unmarshal(raw, &n)
	case "string":
		var s string
		err = json.Unmarshal(raw, &s)
	case "bool":
		var b bool
		err = json.Unmarshal(raw, &b)
	case "object":
		var m map[string]json.RawMessage
		err = json.Unmarshal(raw, &m)
	default:
		panic("fakeretell: unknown kind " + kind)
	}
	return err == nil
}

// clip shortens a frame for a violation message.
func clip(b []byte) string {
	const max = 160
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
