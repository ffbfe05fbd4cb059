package digestauth

import (
	"errors"
	"fmt"
	"strings"
)

// Credentials are the fields of a digest Authorization header that the check uses.
type Credentials struct {
	Username, Realm, Nonce, URI, Response string
	Algorithm, QOP, CNonce                string
	NC                                    string // 8 hex digits, as sent
}

// Bounds on a hostile header: a real one is a few hundred bytes with a dozen fields.
const (
	maxAuthorization = 2048
	maxParams        = 24
)

// ParseCredentials reads an Authorization header value: "Digest" then comma-separated
// name=value pairs, a value a token or a quoted string (RFC 3261 25.1). Unknown fields are
// skipped; a field given twice, an unterminated quote or anything else malformed is an
// error.
func ParseCredentials(v string) (Credentials, error) {
	var c Credentials
	if len(v) > maxAuthorization {
		return c, errors.New("the Authorization header is too long")
	}
	scheme, rest, _ := strings.Cut(strings.TrimLeft(v, " \t"), " ")
	if !strings.EqualFold(scheme, "Digest") {
		return c, fmt.Errorf("scheme %q is not Digest", clip(scheme))
	}
	fields := map[string]*string{
		"username": &c.Username, "realm": &c.Realm, "nonce": &c.Nonce, "uri": &c.URI, "response": &c.Response,
		"algorithm": &c.Algorithm, "qop": &c.QOP, "cnonce": &c.CNonce, "nc": &c.NC,
	}
	seen := map[string]bool{}
	for n := 0; ; n++ {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			break
		}
		if n == maxParams {
			return c, errors.New("too many fields")
		}
		name, value, tail, err := nextParam(rest)
		if err != nil {
			return c, err
		}
		name = strings.ToLower(name)
		if seen[name] {
			return c, fmt.Errorf("field %q given twice", clip(name))
		}
		seen[name] = true
		if f, ok := fields[name]; ok {
			*f = value
		}
		rest = strings.TrimLeft(tail, " \t")
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return c, fmt.Errorf("a field is followed by %q, not a comma", clip(rest))
		}
		rest = rest[1:]
	}
	return c, nil
}

// nextParam reads one name=value from the start of s and returns what follows it.
func nextParam(s string) (name, value, rest string, err error) {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return "", "", "", fmt.Errorf("%q is not name=value", clip(s))
	}
	name = strings.TrimRight(s[:eq], " \t")
	if !isToken(name) {
		return "", "", "", fmt.Errorf("field name %q", clip(name))
	}
	s = strings.TrimLeft(s[eq+1:], " \t")
	if !strings.HasPrefix(s, `"`) {
		end := strings.IndexAny(s, ", \t")
		if end < 0 {
			end = len(s)
		}
		if end == 0 || !isToken(s[:end]) {
			return "", "", "", fmt.Errorf("field %q has no value", clip(name))
		}
		return name, s[:end], s[end:], nil
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch ch := s[i]; ch {
		case '"':
			return name, b.String(), s[i+1:], nil
		case '\\':
			if i+1 == len(s) {
				return "", "", "", errors.New("a quoted value ends in a backslash")
			}
			i++
			b.WriteByte(s[i])
		case '\r', '\n':
			return "", "", "", errors.New("a line break in a quoted value")
		default:
			b.WriteByte(ch)
		}
	}
	return "", "", "", fmt.Errorf("field %q: unterminated quote", clip(name))
}

// isToken reports whether s is a non-empty RFC 3261 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9':
		case strings.IndexByte("-.!%*_+`'~", ch) >= 0:
		default:
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
