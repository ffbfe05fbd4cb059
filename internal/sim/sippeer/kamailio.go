package sippeer

import "testing"

// KamailioOptions configure a kamailio registrar and proxy.
type KamailioOptions struct {
	// Dir holds its config, runtime files and log; t.TempDir() when empty.
	Dir string
	// Realm is the digest realm and the domain users register in; "handset.test" when empty.
	Realm string
	// Users are the accounts, user name to password. REGISTER from any of them must
	// carry a valid digest answer; everyone else is refused.
	Users map[string]string
	// Target, when set ("host:port"), receives INVITEs for users that are not
	// registered: Handset's address on a trunk.
	Target string
	// AuthInvites makes callers authenticate their INVITEs too (407 challenge), as a
	// provider's proxy does for outbound calls.
	AuthInvites bool
}

// Kamailio is a running kamailio.
type Kamailio struct{}

// StartKamailio starts kamailio in the foreground with a generated config: a registrar
// (usrloc in memory, digest checked against Users with no database) and a stateful proxy
// that record-routes, on one free loopback port for UDP and TCP. It is stopped when t ends.
func StartKamailio(t testing.TB, opts KamailioOptions) (*Kamailio, error) { panic("not yet") }

// Addr is the "127.0.0.1:port" it listens on (UDP and TCP).
func (k *Kamailio) Addr() string { panic("not yet") }

// Realm is its digest realm and domain.
func (k *Kamailio) Realm() string { panic("not yet") }

// Log is what kamailio logged so far, for failure messages.
func (k *Kamailio) Log() string { panic("not yet") }

// Stop ends kamailio (it is stopped when t ends anyway).
func (k *Kamailio) Stop() error { panic("not yet") }
