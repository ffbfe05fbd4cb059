package mediastream

// Members calls fn with the raw key (unquoted, escapes left as they are) and the raw value
// of every member of the JSON object in data, without allocating. It refuses, in the same
// single pass, what encoding/json would refuse, and nesting deeper than MaxDepth.
func Members(data []byte, fn func(key, val []byte)) error {
	panic("not yet")
}

// SkipValue returns the index just past the JSON value starting at d[i], refusing what
// encoding/json refuses.
func SkipValue(d []byte, i int) (int, error) {
	panic("not yet")
}

// PlainString returns the contents of val when it is a JSON string without escapes (what
// a carrier's ids, events and base64 payloads are); ok false otherwise.
func PlainString(val []byte) (s []byte, ok bool) {
	panic("not yet")
}

// MaxDepth bounds nesting on the fast path: a message built to recurse deeply is refused.
const MaxDepth = 32

// AppendString appends s as a JSON string: ids and mark names are ASCII Handset chose, but
// anything else is escaped correctly too.
func AppendString(dst []byte, s string) []byte {
	panic("not yet")
}

// DecodeBase64 decodes standard base64 src into dst's storage (up to cap(dst)) without
// allocating; a payload too large for dst is refused.
func DecodeBase64(dst, src []byte) ([]byte, error) {
	panic("not yet")
}
