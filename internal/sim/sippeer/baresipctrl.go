package sippeer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// maxNetstring bounds one message on baresip's control socket.
const maxNetstring = 1 << 20

// commandTimeout bounds how long baresip takes to answer a command.
const commandTimeout = 10 * time.Second

// baresipControl speaks to baresip's ctrl_tcp module: JSON messages framed as netstrings
// ("<length>:<bytes>,"), commands one way, responses and events the other.
type baresipControl struct {
	conn net.Conn

	mu      sync.Mutex
	events  []Event
	cursor  int                       // the first event no wait has returned yet
	changed chan struct{}             // closed and replaced when an event arrives or the socket ends
	replies map[string]chan ctrlReply // by token
	token   int
	readErr error
}

type ctrlReply struct {
	OK   bool   `json:"ok"`
	Data string `json:"data"`
}

// ctrlMessage is anything baresip sends: an event or a response to a command.
type ctrlMessage struct {
	Event    bool   `json:"event"`
	Response bool   `json:"response"`
	Class    string `json:"class"`
	Type     string `json:"type"`
	Param    string `json:"param"`
	PeerURI  string `json:"peeruri"`
	OK       bool   `json:"ok"`
	Data     string `json:"data"`
	Token    string `json:"token"`
}

func dialBaresipControl(addr string) (*baresipControl, error) {
	conn, err := net.DialTimeout("tcp", addr, commandTimeout)
	if err != nil {
		return nil, err
	}
	c := &baresipControl{conn: conn, changed: make(chan struct{}), replies: map[string]chan ctrlReply{}}
	go c.read()
	return c, nil
}

// read takes baresip's messages until the socket closes.
func (c *baresipControl) read() {
	r := bufio.NewReader(c.conn)
	for {
		raw, err := readNetstring(r)
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.broadcast()
			c.mu.Unlock()
			return
		}
		var m ctrlMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			continue // not ours to judge; a wait fails on its own deadline
		}
		c.mu.Lock()
		switch {
		case m.Event:
			c.events = append(c.events, Event{At: time.Now(), Class: m.Class, Type: m.Type, Param: m.Param, Peer: m.PeerURI})
			c.broadcast()
		case m.Response:
			if ch, ok := c.replies[m.Token]; ok {
				ch <- ctrlReply{OK: m.OK, Data: m.Data}
				delete(c.replies, m.Token)
			}
		}
		c.mu.Unlock()
	}
}

// broadcast wakes every wait; c.mu is held.
func (c *baresipControl) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// command runs a baresip command (what its menu would run from a key) and waits for the
// answer.
func (c *baresipControl) command(name, params string) error {
	c.mu.Lock()
	c.token++
	token := strconv.Itoa(c.token)
	reply := make(chan ctrlReply, 1)
	c.replies[token] = reply
	c.mu.Unlock()
	body, err := json.Marshal(map[string]string{"command": name, "params": params, "token": token})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c.conn, "%d:%s,", len(body), body); err != nil {
		return fmt.Errorf("baresip %s: %w", name, err)
	}
	select {
	case r := <-reply:
		if !r.OK {
			return fmt.Errorf("baresip %s %s: refused: %s", name, params, r.Data)
		}
		return nil
	case <-time.After(commandTimeout):
		return fmt.Errorf("baresip %s: no answer within %v", name, commandTimeout)
	}
}

// wait returns the first event since the last one a wait returned whose type is one of
// types, and moves past it.
func (c *baresipControl) wait(ctx context.Context, types ...string) (Event, error) {
	for {
		c.mu.Lock()
		for i := c.cursor; i < len(c.events); i++ {
			if slices.Contains(types, c.events[i].Type) {
				c.cursor = i + 1
				ev := c.events[i]
				c.mu.Unlock()
				return ev, nil
			}
		}
		changed, readErr := c.changed, c.readErr
		c.mu.Unlock()
		if readErr != nil {
			return Event{}, fmt.Errorf("baresip control socket closed waiting for %v: %w", types, readErr)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, fmt.Errorf("waiting for baresip %v: %w (events so far: %v)", types, ctx.Err(), c.all())
		}
	}
}

func (c *baresipControl) all() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

func (c *baresipControl) close() { _ = c.conn.Close() }

// readNetstring reads one "<length>:<bytes>," frame.
func readNetstring(r *bufio.Reader) ([]byte, error) {
	head, err := r.ReadString(':')
	if err != nil {
		return nil, err
	}
	if len(head) > 8 {
		return nil, fmt.Errorf("netstring length %.8q...: too long", head)
	}
	n, err := strconv.Atoi(head[:len(head)-1])
	if err != nil || n < 0 || n > maxNetstring {
		return nil, fmt.Errorf("netstring length %q", head)
	}
	body := make([]byte, n+1)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	if body[n] != ',' {
		return nil, errors.New("netstring without its closing comma")
	}
	return body[:n], nil
}
