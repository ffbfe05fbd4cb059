package mediastream

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Members calls fn with the raw key (unquoted, escapes left as they are) and the raw value
// of every member of the JSON object in data, without allocating. It refuses, in the same
// single pass, what encoding/json would refuse, and nesting deeper than MaxDepth.
func Members(data []byte, fn func(key, val []byte)) error {
	end, err := scanObject(data, skipSpace(data, 0), fn, 0)
	if err != nil {
		return err
	}
	if skipSpace(data, end) != len(data) {
		return errors.New("malformed message: data after the object")
	}
	return nil
}

// SkipValue returns the index just past the JSON value starting at d[i], refusing what
// encoding/json refuses.
func SkipValue(d []byte, i int) (int, error) { return skipValue(d, i, 0) }

// PlainString returns the contents of val when it is a JSON string without escapes (what
// a carrier's ids, events and base64 payloads are); ok false otherwise.
func PlainString(val []byte) (s []byte, ok bool) {
	if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
		return nil, false
	}
	s = val[1 : len(val)-1]
	for _, c := range s {
		if c == '\\' || c == '"' || c < 0x20 {
			return nil, false
		}
	}
	return s, true
}

// Uint reads a non-negative integer member written as a JSON number (4) or as a string of
// digits ("4"): carriers differ (Telnyx's sequence_number is a string, Plivo's a number).
// ok is false for anything else, including a value beyond 2^64-1.
func Uint(val []byte) (n uint64, ok bool) {
	if s, plain := PlainString(val); plain {
		val = s
	}
	if len(val) == 0 || len(val) > 20 {
		return 0, false
	}
	for _, c := range val {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// MaxDepth bounds nesting on the fast path: a carrier's messages are a few levels deep,
// and a message built to recurse deeply is refused.
const MaxDepth = 32

var errTooDeep = errors.New("malformed message: nested too deeply for the fast path")

// AppendString appends s as a JSON string: ids and mark names are ASCII Handset chose, but
// anything else is escaped correctly too.
func AppendString(dst []byte, s string) []byte {
	safe := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			safe = false
			break
		}
	}
	if safe {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s)
	return append(dst, b...)
}

// DecodeBase64 decodes standard base64 src into dst's storage (up to cap(dst)) without
// allocating; a payload too large for dst is refused.
func DecodeBase64(dst, src []byte) ([]byte, error) {
	if base64.StdEncoding.DecodedLen(len(src)) > cap(dst) {
		return nil, fmt.Errorf("media payload of %d bytes is too large", len(src))
	}
	n, err := base64.StdEncoding.Decode(dst[:cap(dst)], src)
	if err != nil {
		return nil, fmt.Errorf("media payload: %w", err)
	}
	return dst[:n], nil
}

// scanObject reads the object starting at d[i], calling fn (when not nil) with each
// member's raw key and value, and returns the index just past it. Every value is checked
// as encoding/json would check it, in the same single pass.
func scanObject(d []byte, i int, fn func(key, val []byte), depth int) (int, error) {
	if depth > MaxDepth {
		return 0, errTooDeep
	}
	if i >= len(d) || d[i] != '{' {
		return 0, errors.New("malformed message: not a JSON object")
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return 0, errors.New("malformed message: expected a key")
		}
		end, err := skipString(d, i)
		if err != nil {
			return 0, err
		}
		key := d[i+1 : end-1]
		i = skipSpace(d, end)
		if i >= len(d) || d[i] != ':' {
			return 0, errors.New("malformed message: expected ':'")
		}
		i = skipSpace(d, i+1)
		vend, err := skipValue(d, i, depth+1)
		if err != nil {
			return 0, err
		}
		if fn != nil {
			fn(key, d[i:vend])
		}
		i = skipSpace(d, vend)
		if i >= len(d) {
			return 0, errors.New("malformed message: unterminated object")
		}
		if d[i] == '}' {
			return i + 1, nil
		}
		if d[i] != ',' {
			return 0, errors.New("malformed message: expected ',' or '}'")
		}
		i = skipSpace(d, i+1)
	}
}

// scanArray returns the index just past the array starting at d[i] == '['.
func scanArray(d []byte, i int, depth int) (int, error) {
	if depth > MaxDepth {
		return 0, errTooDeep
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := skipValue(d, i, depth+1)
		if err != nil {
			return 0, err
		}
		i = skipSpace(d, end)
		if i >= len(d) {
			return 0, errors.New("malformed message: unterminated array")
		}
		if d[i] == ']' {
			return i + 1, nil
		}
		if d[i] != ',' {
			return 0, errors.New("malformed message: expected ',' or ']'")
		}
		i = skipSpace(d, i+1)
	}
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at d[i] == '"', refusing
// what encoding/json refuses: raw control characters and unknown escapes.
func skipString(d []byte, i int) (int, error) {
	for j := i + 1; j < len(d); j++ {
		switch c := d[j]; {
		case c == '"':
			return j + 1, nil
		case c < 0x20:
			return 0, errors.New("malformed message: control character in a string")
		case c == '\\':
			j++
			if j >= len(d) {
				break
			}
			switch d[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(d) || !isHex(d[j+1]) || !isHex(d[j+2]) || !isHex(d[j+3]) || !isHex(d[j+4]) {
					return 0, errors.New("malformed message: bad \\u escape")
				}
				j += 4
			default:
				return 0, errors.New("malformed message: bad escape")
			}
		}
	}
	return 0, errors.New("malformed message: unterminated string")
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// skipValue returns the index just past the JSON value starting at d[i] at nesting depth,
// refusing what encoding/json refuses.
func skipValue(d []byte, i, depth int) (int, error) {
	if i >= len(d) {
		return 0, errors.New("malformed message: missing value")
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{':
		return scanObject(d, i, nil, depth)
	case '[':
		return scanArray(d, i, depth)
	}
	j := i
	for j < len(d) && d[j] != ',' && d[j] != '}' && d[j] != ']' && d[j] != ' ' && d[j] != '\n' && d[j] != '\r' && d[j] != '\t' {
		j++
	}
	if j == i || !json.Valid(d[i:j]) { // a number, true, false or null, and nothing else
		return 0, errors.New("malformed message: bad value")
	}
	return j, nil
}
