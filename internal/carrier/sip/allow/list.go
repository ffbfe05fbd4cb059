// Package allow decides who may start a call over a SIP trunk. A public SIP port is probed
// all day by scanners that try to place calls through it; Handset accepts an INVITE only
// from its trunk's signalling hosts, named in HANDSET_SIP_ALLOW as IP addresses, CIDR
// blocks or hostnames (a provider publishes its hosts as names whose addresses change).
// List holds that allow-list; Refuser bounds what Handset spends answering everyone else.
package allow

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// MaxEntries bounds the entries in HANDSET_SIP_ALLOW.
const MaxEntries = 256

// maxAddrsPerHost bounds what one hostname may add to the list, whatever DNS answers.
const maxAddrsPerHost = 64

// ErrBadEntry classifies Parse's errors (errors.Is); the message names the entry.
var ErrBadEntry = errors.New("allow: bad entry")

// Resolver looks up a hostname's addresses; *net.Resolver is one ("ip" asks for A and
// AAAA records).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// List is a parsed allow-list. Allowed is safe to call while Refresh runs. A nil *List
// is empty: it allows nothing.
type List struct {
	entries   []string       // as written (normalised), for String
	prefixes  []netip.Prefix // the addresses and blocks
	hostnames []string

	refreshing sync.Mutex                 // one Refresh at a time
	resolved   atomic.Pointer[resolution] // nil until the first Refresh
}

// resolution is what the hostnames resolved to, replaced whole on each Refresh so Allowed
// reads it without a lock.
type resolution struct {
	byHost map[string][]netip.Addr
	addrs  map[netip.Addr]struct{}
}

// Parse reads a comma-separated list of IP addresses, CIDR blocks and hostnames; blanks
// around entries and empty entries are ignored, and an empty spec is an empty list. A port
// ("host:5060") is refused rather than ignored: the list is about hosts, and a port would
// suggest a check Handset does not make. So is a /0 block, which would let the whole
// internet call.
func Parse(spec string) (*List, error) {
	l := &List{}
	for raw := range strings.SplitSeq(spec, ",") {
		entry := strings.TrimSpace(raw)
		if entry == "" {
			continue
		}
		if len(l.entries) == MaxEntries {
			return nil, fmt.Errorf("%w: more than %d entries", ErrBadEntry, MaxEntries)
		}
		if err := l.add(entry); err != nil {
			return nil, fmt.Errorf("%w %q: %s", ErrBadEntry, clip(entry), err)
		}
	}
	return l, nil
}

func (l *List) add(entry string) error {
	prefix, host, err := parseEntry(entry)
	if err != nil {
		return err
	}
	if host != "" {
		if !slices.Contains(l.hostnames, host) {
			l.hostnames = append(l.hostnames, host)
			l.entries = append(l.entries, host)
		}
		return nil
	}
	if !slices.Contains(l.prefixes, prefix) {
		l.prefixes = append(l.prefixes, prefix)
		l.entries = append(l.entries, prefix.String())
	}
	return nil
}

// parseEntry reads one entry as a block, an address or a hostname.
func parseEntry(entry string) (netip.Prefix, string, error) {
	if strings.Contains(entry, "/") {
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			return netip.Prefix{}, "", errors.New("not an address block (CIDR)")
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return netip.Prefix{}, "", errors.New("an IPv4-mapped block wider than IPv4")
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if p.Bits() == 0 {
			return netip.Prefix{}, "", errors.New("allows every address: name the trunk's hosts")
		}
		if p.Masked() != p {
			return netip.Prefix{}, "", fmt.Errorf("host bits set: the block is %s", p.Masked())
		}
		return p, "", nil
	}
	if a, err := netip.ParseAddr(entry); err == nil {
		if a.Zone() != "" {
			return netip.Prefix{}, "", errors.New("an address with a zone")
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), "", nil
	}
	if _, err := netip.ParseAddrPort(entry); err == nil || strings.ContainsAny(entry, ":[]") {
		return netip.Prefix{}, "", errors.New("a port or brackets: give the host alone")
	}
	host, err := hostname(entry)
	if err != nil {
		return netip.Prefix{}, "", err
	}
	return netip.Prefix{}, host, nil
}

// hostname checks a DNS name (letters, digits and hyphens in dot-separated labels) and
// returns it lower-cased without a final dot.
func hostname(s string) (string, error) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > 253 {
		return "", errors.New("not a hostname")
	}
	labels := strings.Split(s, ".")
	for _, label := range labels {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", errors.New("not a hostname")
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return "", fmt.Errorf("not a hostname (%q)", c)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", errors.New("neither an address nor a hostname")
	}
	return s, nil
}

// Allowed reports whether ip is one of the listed addresses or blocks, or one a hostname
// resolved to at the last successful Refresh. An IPv4-mapped IPv6 address matches its
// IPv4 entries.
func (l *List) Allowed(ip netip.Addr) bool {
	if l == nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	for _, p := range l.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	if r := l.resolved.Load(); r != nil {
		_, ok := r.addrs[ip]
		return ok
	}
	return false
}

// Refresh resolves the hostnames again (A and AAAA). A hostname whose lookup fails, or
// returns no address, keeps the addresses it last resolved to; the error joins every
// failure. The caller refreshes at start and every few minutes.
func (l *List) Refresh(ctx context.Context, r Resolver) error {
	if l == nil || len(l.hostnames) == 0 {
		return nil
	}
	l.refreshing.Lock()
	defer l.refreshing.Unlock()
	var last map[string][]netip.Addr
	if old := l.resolved.Load(); old != nil {
		last = old.byHost
	}
	next := &resolution{byHost: map[string][]netip.Addr{}, addrs: map[netip.Addr]struct{}{}}
	var errs []error
	for _, host := range l.hostnames {
		addrs, err := lookup(ctx, r, host)
		if err != nil {
			errs = append(errs, err)
			addrs = last[host]
		}
		if addrs == nil {
			continue
		}
		next.byHost[host] = addrs
		for _, a := range addrs {
			next.addrs[a] = struct{}{}
		}
	}
	l.resolved.Store(next)
	return errors.Join(errs...)
}

// lookup resolves one hostname to a sorted, de-duplicated, bounded set.
func lookup(ctx context.Context, r Resolver, host string) ([]netip.Addr, error) {
	found, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("allow: resolving %s: %w", host, err)
	}
	addrs := make([]netip.Addr, 0, min(len(found), maxAddrsPerHost))
	for _, a := range found {
		if a.IsValid() {
			addrs = append(addrs, a.Unmap().WithZone(""))
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	addrs = slices.Compact(addrs)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("allow: resolving %s: no address", host)
	}
	return addrs[:min(len(addrs), maxAddrsPerHost)], nil
}

// Empty reports whether the list names nothing: every INVITE without credentials is
// refused.
func (l *List) Empty() bool {
	return l == nil || len(l.entries) == 0
}

// String describes the list for doctor: its entries, and what each hostname resolved to.
func (l *List) String() string {
	if l.Empty() {
		return "(empty: only calls with credentials)"
	}
	r := l.resolved.Load()
	parts := make([]string, 0, len(l.entries))
	for _, e := range l.entries {
		if !slices.Contains(l.hostnames, e) {
			parts = append(parts, e)
			continue
		}
		switch addrs := resolvedOf(r, e); {
		case r == nil:
			parts = append(parts, e+" (not resolved yet)")
		case len(addrs) == 0:
			parts = append(parts, e+" (unresolved)")
		default:
			texts := make([]string, len(addrs))
			for i, a := range addrs {
				texts[i] = a.String()
			}
			parts = append(parts, e+" ("+strings.Join(texts, " ")+")")
		}
	}
	return strings.Join(parts, ", ")
}

func resolvedOf(r *resolution, host string) []netip.Addr {
	if r == nil {
		return nil
	}
	return r.byHost[host]
}

// clip shortens what an error quotes from configuration.
func clip(s string) string {
	const limit = 64
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}
