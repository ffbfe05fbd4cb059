// Package allow decides who may start a call over a SIP trunk. A public SIP port is probed
// all day by scanners that try to place calls through it; Handset accepts an INVITE only
// from its trunk's signalling hosts, named in HANDSET_SIP_ALLOW as IP addresses, CIDR
// blocks or hostnames (a provider publishes its hosts as names whose addresses change).
// List holds that allow-list; Refuser bounds what Handset spends answering everyone else.
package allow

import (
	"context"
	"errors"
	"net/netip"
)

// MaxEntries bounds the entries in HANDSET_SIP_ALLOW.
const MaxEntries = 256

// ErrBadEntry classifies Parse's errors (errors.Is); the message names the entry.
var ErrBadEntry = errors.New("allow: bad entry")

// Resolver looks up a hostname's addresses; *net.Resolver is one ("ip" asks for A and
// AAAA records).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// List is a parsed allow-list. Allowed is safe to call while Refresh runs.
type List struct {
	prefixes  []netip.Prefix
	hostnames []string
}

// Parse reads a comma-separated list of IP addresses, CIDR blocks and hostnames; blanks
// around entries are ignored, and an empty spec is an empty list. A port ("host:5060") is
// refused rather than ignored: the list is about hosts, and a port would suggest a check
// Handset does not make.
func Parse(spec string) (*List, error) {
	panic("not implemented")
}

// Allowed reports whether ip is one of the listed addresses or blocks, or one a hostname
// resolved to at the last successful Refresh. An IPv4-mapped IPv6 address matches its
// IPv4 entries.
func (l *List) Allowed(ip netip.Addr) bool {
	panic("not implemented")
}

// Refresh resolves the hostnames again (A and AAAA). A hostname whose lookup fails keeps
// the addresses it last resolved to; the error joins every failure. The caller refreshes
// at start and every few minutes.
func (l *List) Refresh(ctx context.Context, r Resolver) error {
	panic("not implemented")
}

// Empty reports whether the list names nothing: every INVITE without credentials is
// refused.
func (l *List) Empty() bool {
	panic("not implemented")
}

// String describes the list for doctor: its entries, and what each hostname resolved to.
func (l *List) String() string {
	panic("not implemented")
}
