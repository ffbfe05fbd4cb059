package telnyxsim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// event is one call event waiting to be delivered.
type event struct {
	id, typ  string
	at       time.Time
	payload  map[string]any
	url      string // where it goes; the failover is read at delivery
	failover string
}

// envelope is a webhook's body, field for field as Telnyx sends it.
type envelope struct {
	Data struct {
		RecordType string         `json:"record_type"`
		EventType  string         `json:"event_type"`
		ID         string         `json:"id"`
		OccurredAt string         `json:"occurred_at"`
		Payload    map[string]any `json:"payload"`
	} `json:"data"`
	Meta struct {
		Attempt     int    `json:"attempt"`
		DeliveredTo string `json:"delivered_to"`
	} `json:"meta"`
}

// emitLocked queues event typ of call c with its common payload and extra fields.
func (s *Server) emitLocked(c *call, typ string, extra map[string]any) {
	p := map[string]any{
		"call_control_id": c.CallControlID, "call_leg_id": c.CallLegID, "call_session_id": c.CallSessionID,
		"connection_id": s.opts.ConnectionID, "from": c.From, "to": c.To, "direction": c.Direction,
		"state": c.State, "client_state": nil,
	}
	if c.ClientState != "" {
		p["client_state"] = c.ClientState
	}
	for k, v := range extra {
		p[k] = v
	}
	url := c.WebhookURL
	if url == "" {
		url = s.app.webhookURL
	}
	c.queue = append(c.queue, event{id: randomUUID(), typ: typ, at: s.opts.Now().UTC(), payload: p, url: url, failover: s.app.failoverURL})
	c.Pending++
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// deliverAll sends call c's events in order until the call has ended and none is left.
func (s *Server) deliverAll(c *call) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(c.queue) == 0 {
			over := !c.Alive
			s.mu.Unlock()
			if over {
				return
			}
			select {
			case <-c.wake:
				continue
			case <-s.ctx.Done():
				return
			}
		}
		e := c.queue[0]
		s.mu.Unlock()
		s.deliver(e)
		s.mu.Lock()
		c.queue = c.queue[1:]
		c.Pending--
		c.Events = append(c.Events, e.typ)
		s.changedLocked()
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			return
		}
	}
}

// deliver POSTs e until an answer is 2xx: first to its URL with WebhookRetries more
// attempts, then once to the failover URL, if any.
func (s *Server) deliver(e event) {
	attempts := 1 + max(s.opts.WebhookRetries, 0)
	for attempt := 1; attempt <= attempts+1; attempt++ {
		url := e.url
		if attempt > attempts {
			if e.failover == "" {
				return
			}
			url = e.failover
		}
		if attempt > 1 {
			t := time.NewTimer(s.opts.RetryDelay)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
		}
		if s.post(e, attempt, url) {
			return
		}
	}
}

// post sends one attempt of e to url and records it; it reports a 2xx answer.
func (s *Server) post(e event, attempt int, url string) bool {
	var env envelope
	env.Data.RecordType, env.Data.EventType, env.Data.ID = "event", e.typ, e.id
	env.Data.OccurredAt, env.Data.Payload = e.at.Format(time.RFC3339Nano), e.payload
	env.Meta.Attempt, env.Meta.DeliveredTo = attempt, url
	body, err := json.Marshal(env)
	if err != nil {
		panic("telnyxsim: " + err.Error())
	}
	status := 0
	if url != "" {
		status = s.send(url, body)
	}
	s.mu.Lock()
	s.webhooks = append(s.webhooks, Webhook{EventType: e.typ, ID: e.id, Attempt: attempt, URL: url, Body: body, Status: status})
	s.mu.Unlock()
	return status >= 200 && status <= 299
}

// send POSTs a signed body; 0 for a transport failure.
func (s *Server) send(url string, body []byte) int {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	ts, sig := s.Sign(body, s.opts.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "telnyx-webhooks")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sig)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode
}
