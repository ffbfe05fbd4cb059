package session

import (
	"fmt"
	"regexp"
	"strings"
)

// KeyFactory derives the session key an agent runtime files a call's memory under. An
// empty key means "no key": the adapter then omits its header.
type KeyFactory func(Context) string

// Selectors for HANDSET_SESSION_KEY_FROM.
const (
	FromNone       = ""
	FromCallerHash = "caller_hash"
)

// None gives no session key: each call is its own conversation.
func None(Context) string { return "" }

// ByCallerHash keys memory by caller: the same number reaches the same memory on every
// call, and only its hash ever leaves Handset.
func ByCallerHash(c Context) string {
	if c.CallerHash == "" {
		return ""
	}
	return "handset:" + c.CallerHash
}

var placeholder = regexp.MustCompile(`\{([a-z_]+)\}`)

// templateFields are the placeholders a key template may use.
var templateFields = map[string]func(Context) string{
	"caller_hash": func(c Context) string { return c.CallerHash },
	"callee_hash": func(c Context) string { return c.CalleeHash },
	"call_id":     func(c Context) string { return string(c.CallID) },
	"carrier":     func(c Context) string { return c.Carrier },
	"direction":   func(c Context) string { return string(c.Direction) },
}

// Template fills {caller_hash}, {callee_hash}, {call_id}, {carrier} and {direction}. An
// unknown placeholder is an error now, not a surprise on a call. A template whose fields
// are all empty gives no key, and so does one keyed by {caller_hash} for a caller without
// one (withheld or unverified): the rest of the key would be the same for all of them.
func Template(tmpl string) (KeyFactory, error) {
	byCaller := false
	for _, m := range placeholder.FindAllStringSubmatch(tmpl, -1) {
		if templateFields[m[1]] == nil {
			return nil, fmt.Errorf("session key template %q: unknown placeholder {%s} (use %s)", tmpl, m[1], fieldList())
		}
		byCaller = byCaller || m[1] == "caller_hash"
	}
	return func(c Context) string {
		if byCaller && c.CallerHash == "" {
			return ""
		}
		empty := true
		out := placeholder.ReplaceAllStringFunc(tmpl, func(p string) string {
			v := templateFields[p[1:len(p)-1]](c)
			empty = empty && v == ""
			return v
		})
		if empty && strings.Contains(tmpl, "{") {
			return ""
		}
		return out
	}, nil
}

func fieldList() string {
	return "{caller_hash}, {callee_hash}, {call_id}, {carrier}, {direction}"
}

// ParseKeyFactory turns the settings into a factory: HANDSET_SESSION_KEY_FROM (from) and
// HANDSET_SESSION_KEY (key: a fixed key, or a template with placeholders).
func ParseKeyFactory(from, key string) (KeyFactory, error) {
	switch {
	case from == FromCallerHash && key != "":
		return nil, fmt.Errorf("HANDSET_SESSION_KEY_FROM=caller_hash and HANDSET_SESSION_KEY: set only one")
	case from == FromCallerHash:
		return ByCallerHash, nil
	case from != FromNone:
		return nil, fmt.Errorf("HANDSET_SESSION_KEY_FROM=%q is not one of caller_hash or empty", from)
	case key == "":
		return None, nil
	case strings.Contains(key, "{"):
		return Template(key)
	}
	return func(Context) string { return key }, nil
}

// StoredKey is the session key Handset records for a key a runtime reports: OpenClaw files
// a session under "agent:<agent id>:" followed by Handset's key, and a tool there may send
// the whole gateway key.
func StoredKey(key string) string {
	if rest, ok := strings.CutPrefix(key, "agent:"); ok {
		if _, handset, ok := strings.Cut(rest, ":"); ok && strings.HasPrefix(handset, "handset:") {
			return handset
		}
	}
	return key
}
