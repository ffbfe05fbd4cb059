package sippeer

import (
	"context"
	"testing"
	"time"
)

// BaresipOptions configure a baresip user agent.
type BaresipOptions struct {
	// Dir holds its config, the control socket's state and recordings; t.TempDir() when empty.
	Dir string
	// Source is the WAV it plays to the far end of every call (mono, 16-bit, 8 or 16
	// kHz); WriteSpeechWAV makes one. Required.
	Source string
	// User is the user part of its address of record; "baresip" when empty.
	User string
	// Registrar, when set ("host:port"), is where it REGISTERs with AuthUser and Password
	// (digest); calls then go through it as the outbound proxy.
	Registrar string
	// AuthUser and Password answer digest challenges; AuthUser defaults to User.
	AuthUser, Password string
	// Transport is "udp" (the default) or "tcp".
	Transport string
	// Codecs are the audio codecs offered, in order; PCMU and PCMA when empty.
	Codecs []string
	// AutoAnswer answers incoming calls at once.
	AutoAnswer bool
}

// An Event is one thing baresip reported on its control socket, as it arrived.
type Event struct {
	At    time.Time
	Class string // "call", "register", ...
	Type  string // "CALL_ESTABLISHED", "CALL_CLOSED", "REGISTER_OK", ...
	Param string // the detail baresip gave (a status line for failures)
	Peer  string // the far end's URI, for call events
}

// Baresip is a running baresip.
type Baresip struct{}

// StartBaresip starts baresip with a generated config: no sound card (audio comes from
// Source, what it hears is recorded to Recording), the ctrl_tcp control socket on a free
// loopback port, SIP on another. It is stopped when t ends.
func StartBaresip(t testing.TB, opts BaresipOptions) (*Baresip, error) { panic("not yet") }

// Addr is the "127.0.0.1:port" its SIP socket listens on.
func (b *Baresip) Addr() string { panic("not yet") }

// URI is its own SIP URI, for a peer that calls it directly.
func (b *Baresip) URI() string { panic("not yet") }

// Dial calls uri ("sip:handset@127.0.0.1:5080").
func (b *Baresip) Dial(uri string) error { panic("not yet") }

// Hangup ends the current call.
func (b *Baresip) Hangup() error { panic("not yet") }

// WaitRegistered waits for the registrar's answer: nil for REGISTER_OK, an error naming
// the failure for REGISTER_FAIL.
func (b *Baresip) WaitRegistered(ctx context.Context) error { panic("not yet") }

// WaitEstablished waits for a call to be answered and returns the event; a call that
// closes first is an error naming why.
func (b *Baresip) WaitEstablished(ctx context.Context) (Event, error) { panic("not yet") }

// WaitClosed waits for the call to end and returns the event.
func (b *Baresip) WaitClosed(ctx context.Context) (Event, error) { panic("not yet") }

// Events are the events so far, in order.
func (b *Baresip) Events() []Event { panic("not yet") }

// Recording is the WAV of what it heard on its last call (16-bit PCM, written while the
// call runs, complete once the call is closed).
func (b *Baresip) Recording() (string, error) { panic("not yet") }

// Log is what baresip printed so far.
func (b *Baresip) Log() string { panic("not yet") }

// Stop ends baresip (it is stopped when t ends anyway).
func (b *Baresip) Stop() error { panic("not yet") }
