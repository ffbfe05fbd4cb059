package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// Retell's custom LLM is a WebSocket Retell dials for every call, at the URL its agent is
// given with the call's id appended: GET /v1/retell/{token}/{call_id}. Retell sends no
// header of its own choosing, so the bridge's token is a segment of that URL. On the
// socket, Retell sends the call's transcript as it grows and asks for a response by
// number (response_required, reminder_required); the bridge streams each answer as
// response events for that number. A newer request ends the older one: its run is
// stopped and nothing more is sent for it.

// retellIdle is how long a Retell socket may stay silent. Retell pings every 2 seconds
// (the config asks it to), so a socket silent this long is dead, or not Retell.
const retellIdle = 30 * time.Second

// Retell's events, both ways. Only the fields the bridge reads or writes.
type (
	retellEvent struct {
		InteractionType string            `json:"interaction_type"`
		ResponseID      *int              `json:"response_id"`
		Transcript      []retellUtterance `json:"transcript"`
		Timestamp       int64             `json:"timestamp"`
		Call            *retellCallInfo   `json:"call"`
	}
	retellUtterance struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	retellCallInfo struct {
		CallID     string `json:"call_id"`
		Direction  string `json:"direction"`
		FromNumber string `json:"from_number"`
		ToNumber   string `json:"to_number"`
	}
	retellConfig struct {
		ResponseType string `json:"response_type"`
		Config       struct {
			AutoReconnect bool `json:"auto_reconnect"`
			CallDetails   bool `json:"call_details"`
		} `json:"config"`
	}
	retellResponse struct {
		ResponseType    string `json:"response_type"`
		ResponseID      int    `json:"response_id"`
		Content         string `json:"content"`
		ContentComplete bool   `json:"content_complete"`
	}
	retellPong struct {
		ResponseType string `json:"response_type"`
		Timestamp    int64  `json:"timestamp"`
	}
)

// retell serves one Retell call's socket.
func (h *Handler) retell(w http.ResponseWriter, r *http.Request) {
	tok := h.match(r.PathValue("token"))
	if tok == nil {
		apiError{status: http.StatusUnauthorized, Type: typeAuthentication, Code: "invalid_api_key",
			Message: "the Retell URL must hold the bridge's token: /v1/retell/<HANDSET_BRIDGE_TOKEN>"}.write(w)
		return
	}
	raw := strings.TrimSpace(r.PathValue("call_id"))
	if raw == "" {
		http.Error(w, "no call id", http.StatusNotFound)
		return
	}
	// No cookie or other ambient credential opens this socket, only the token in its
	// URL: a page of another origin gains nothing from it.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the client
	}
	conn.SetReadLimit(maxBody)
	c := &retellCall{h: h, conn: conn, tok: tok, callID: sessionCallID(raw)}
	c.log = h.log.With("call", c.callID, "platform", "retell")
	c.serve(r.Context())
}

// retellCall is one Retell call: its socket, its session, and the response in progress.
type retellCall struct {
	h      *Handler
	conn   *websocket.Conn
	tok    *clientToken
	callID voice.CallID
	log    *slog.Logger

	mu      sync.Mutex // guards the following
	caller  string     // the other party's number, from call_details; only ever hashed
	inbound bool
	latest  int                // the response id Retell asked for last
	stop    context.CancelFunc // ends the response in progress; nil when none runs
	running sync.WaitGroup
}

// serve runs the call until Retell closes the socket or ctx ends.
func (c *retellCall) serve(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		c.running.Wait()
		c.conn.CloseNow()
	}()
	var config retellConfig
	config.ResponseType = "config"
	config.Config.AutoReconnect, config.Config.CallDetails = true, true
	c.send(ctx, config)
	// The begin message: what the agent says first, or nothing (the user speaks first).
	c.reply(ctx, retellResponse{ResponseType: "response", ResponseID: 0, Content: c.h.spoken.First, ContentComplete: true})
	for {
		readCtx, done := context.WithTimeout(ctx, retellIdle)
		typ, data, err := c.conn.Read(readCtx)
		done()
		if err != nil {
			if s := websocket.CloseStatus(err); s == websocket.StatusNormalClosure || s == websocket.StatusGoingAway {
				c.ended() // the call is over; any other loss, Retell dials again
			} else {
				c.log.Info("retell socket lost", "err", err)
			}
			return
		}
		var ev retellEvent
		if typ != websocket.MessageText || json.Unmarshal(data, &ev) != nil {
			c.log.Warn("retell: a message that is not a JSON event was ignored", "bytes", len(data))
			continue
		}
		switch ev.InteractionType {
		case "ping_pong":
			c.send(ctx, retellPong{ResponseType: "ping_pong", Timestamp: ev.Timestamp})
		case "call_details":
			c.details(ev.Call)
		case "update_only":
			// the transcript so far; the next request carries it again
		case "response_required", "reminder_required":
			c.respond(ctx, ev)
		default:
			c.log.Debug("retell: event ignored", "interaction_type", voice.Clip(ev.InteractionType, 40))
		}
	}
}

// ended journals the end of a call that had turns: Retell closed its socket normally.
func (c *retellCall) ended() {
	c.mu.Lock()
	began := c.latest > 0
	c.mu.Unlock()
	if !began {
		return
	}
	now := time.Now()
	conv := c.h.sessions.open(c.sessionContext(), true, now)
	conv.ended(voice.EndCallerHangup.String(), now)
	c.h.sessions.done(conv, now)
}

// details notes who the call is with: for an inbound call the caller, for an outbound
// one the number called.
func (c *retellCall) details(call *retellCallInfo) {
	if call == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inbound = call.Direction != "outbound"
	c.caller = strings.TrimSpace(call.FromNumber)
	if !c.inbound {
		c.caller = strings.TrimSpace(call.ToNumber)
	}
}

// respond ends the response in progress and starts the one asked for.
func (c *retellCall) respond(ctx context.Context, ev retellEvent) {
	if ev.ResponseID == nil {
		c.log.Warn("retell: a request without response_id was ignored", "interaction_type", ev.InteractionType)
		return
	}
	id := *ev.ResponseID
	c.mu.Lock()
	if c.stop != nil {
		c.stop() // the user spoke again: the older response is stale
	}
	c.latest = id
	turnCtx, stop := context.WithCancel(ctx)
	c.stop = stop
	c.mu.Unlock()
	history := retellHistory(ev.Transcript)
	if ev.InteractionType == "reminder_required" || len(history) == 0 || history[len(history)-1].Role != voice.RoleUser {
		// The user has been quiet: the reminder Handset's own calls speak. It is in the
		// transcript from now on, and the runtime is told it with the next turn.
		c.reply(turnCtx, retellResponse{ResponseType: "response", ResponseID: id, Content: c.h.spoken.Silence, ContentComplete: true})
		return
	}
	release, _ := c.tok.limit.start(time.Now())
	if release == nil {
		c.h.observed("refused", -1)
		c.log.Warn("retell turn refused: over the bridge's limits for this token (HANDSET_BRIDGE_RATE, HANDSET_BRIDGE_MAX_TURNS)")
		c.reply(turnCtx, retellResponse{ResponseType: "response", ResponseID: id, Content: c.h.spoken.Error, ContentComplete: true})
		return
	}
	c.running.Go(func() {
		defer release()
		defer stop()
		c.turn(turnCtx, id, history)
	})
}

// turn runs one response: the runtime's reply streamed as response events for id.
func (c *retellCall) turn(ctx context.Context, id int, history []voice.Message) {
	out := &retellReply{c: c, ctx: ctx, id: id}
	c.h.runTurn(ctx, c.sessionContext(), true, history, time.Now(), out, c.log.With("response_id", id))
}

// sessionContext is the session the call's turns are filed under, with the caller's hash
// once call_details named them.
func (c *retellCall) sessionContext() session.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := identity{callID: c.callID, source: "retell", caller: c.caller}
	sc := id.context(c.h.hash)
	if !c.inbound && c.caller != "" {
		sc.Direction = voice.Outbound
	}
	return sc
}

// reply sends a response event, unless Retell no longer waits for its id.
func (c *retellCall) reply(ctx context.Context, r retellResponse) {
	c.mu.Lock()
	stale := r.ResponseID != c.latest
	c.mu.Unlock()
	if !stale {
		c.send(ctx, r)
	}
}

// send writes one event.
func (c *retellCall) send(ctx context.Context, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeGrace)
	defer cancel()
	if err := c.conn.Write(wctx, websocket.MessageText, b); err != nil && !errors.Is(err, context.Canceled) {
		c.log.Debug("retell: write failed", "err", err)
	}
}

// retellReply is one response as relay writes it: text as response events, then the
// closing one.
type retellReply struct {
	c    *retellCall
	ctx  context.Context
	id   int
	sent bool // some text went out
}

func (o *retellReply) text(s string) {
	if o.ctx.Err() == nil {
		o.sent = true
		o.c.reply(o.ctx, retellResponse{ResponseType: "response", ResponseID: o.id, Content: s})
	}
}

func (o *retellReply) finish(voice.Usage) { o.complete("") }

// fail ends the response with Handset's words: the runtime's own text is never spoken.
func (o *retellReply) fail(error) {
	if o.sent {
		o.complete(" " + o.c.h.spoken.Error)
		return
	}
	o.complete(o.c.h.spoken.Error)
}

// complete ends the response, with a last piece of text.
func (o *retellReply) complete(s string) {
	o.c.reply(o.ctx, retellResponse{ResponseType: "response", ResponseID: o.id, Content: s, ContentComplete: true})
}

func (o *retellReply) keepalive() {} // Retell's own pings keep the socket alive
func (o *retellReply) commit()    {}

// retellHistory is Retell's transcript as the runtime's history: the agent's utterances
// are the assistant's, empty ones are left out, and a transcript longer than a request
// may be keeps its latest messages.
func retellHistory(transcript []retellUtterance) []voice.Message {
	var out []voice.Message
	for _, u := range transcript {
		role := voice.RoleUser
		switch u.Role {
		case "user":
		case "agent":
			role = voice.RoleAssistant
		default:
			continue
		}
		if strings.TrimSpace(u.Content) == "" {
			continue
		}
		out = append(out, voice.Message{Role: role, Content: u.Content})
	}
	if len(out) > maxMessages {
		out = out[len(out)-maxMessages:]
	}
	return out
}
