// Package json5 reads JSON5 documents (comments, trailing commas, unquoted keys, single
// quotes, hex and signed numbers) keeping the byte span of every value, and edits them in
// place: a changed value or an added member is spliced into the original text, so comments,
// quoting, order and layout everywhere else stay byte for byte as they were. It exists so
// that `handset setup` can change OpenClaw's openclaw.json without rewriting the file.
package json5

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the type of a value.
type Kind int

// The kinds of values.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

func (k Kind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// Node is one value of a document with its place in the text.
type Node struct {
	Kind       Kind
	Start, End int // the value's bytes: src[Start:End] (an object or array from its bracket to its closing one)

	Bool bool   // Bool
	Num  string // Number: the text as written (0x1F, +.5, Infinity)
	Str  string // String: the decoded text

	Members []*Member // Object, in the order written
	Elems   []*Node   // Array
}

// Member is one key and value of an object.
type Member struct {
	Key              string
	KeyStart, KeyEnd int
	Quote            byte // the key's quote ('"' or '\''), 0 when written as an identifier
	Value            *Node
}

// Lookup returns the object's members named key (JSON5 allows a key twice; the last wins).
func (n *Node) Lookup(key string) []*Member {
	var out []*Member
	for _, m := range n.Members {
		if m.Key == key {
			out = append(out, m)
		}
	}
	return out
}

// SyntaxError is a document that is not JSON5, with where.
type SyntaxError struct {
	Offset    int
	Line, Col int // 1-based
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// MaxDepth bounds nesting: a hostile document cannot exhaust the stack.
const MaxDepth = 500

// Parse reads a whole JSON5 document: one value with optional whitespace and comments
// around it.
func Parse(src []byte) (*Node, error) {
	p := &parser{src: src}
	if !utf8.Valid(src) {
		return nil, p.fail(invalidUTF8(src), "the text is not valid UTF-8")
	}
	p.skip()
	if p.err != nil {
		return nil, p.err
	}
	n := p.value(0)
	if p.err != nil {
		return nil, p.err
	}
	p.skip()
	if p.err != nil {
		return nil, p.err
	}
	if p.pos < len(src) {
		return nil, p.fail(p.pos, "unexpected "+p.describe()+" after the document's value")
	}
	return n, nil
}

func invalidUTF8(src []byte) int {
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return 0
}

type parser struct {
	src []byte
	pos int
	err error
}

func (p *parser) fail(at int, msg string) error {
	if p.err == nil {
		line, col := Position(p.src, at)
		p.err = &SyntaxError{Offset: at, Line: line, Col: col, Msg: msg}
	}
	return p.err
}

// Position is the 1-based line and column (in characters) of a byte offset.
func Position(src []byte, at int) (line, col int) {
	at = min(max(at, 0), len(src))
	line = 1 + bytes.Count(src[:at], []byte("\n"))
	start := bytes.LastIndexByte(src[:at], '\n') + 1
	return line, 1 + utf8.RuneCount(src[start:at])
}

func (p *parser) describe() string {
	if p.pos >= len(p.src) {
		return "end of text"
	}
	r, _ := utf8.DecodeRune(p.src[p.pos:])
	return strconv.QuoteRune(r)
}

// isSpace is JSON5's white space: the ASCII ones, NBSP, BOM, line and paragraph
// separators, and every other space separator (Zs).
func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0xFEFF, 0x2028, 0x2029:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

func isLineEnd(r rune) bool { return r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029 }

// skip passes white space and comments.
func (p *parser) skip() {
	for p.pos < len(p.src) {
		r, size := utf8.DecodeRune(p.src[p.pos:])
		switch {
		case isSpace(r):
			p.pos += size
		case r == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/':
			p.pos += 2
			for p.pos < len(p.src) {
				r, size := utf8.DecodeRune(p.src[p.pos:])
				if isLineEnd(r) {
					break
				}
				p.pos += size
			}
		case r == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '*':
			end := bytes.Index(p.src[p.pos+2:], []byte("*/"))
			if end < 0 {
				p.fail(p.pos, "a /* comment is never closed")
				return
			}
			p.pos += 2 + end + 2
		default:
			return
		}
	}
}

func (p *parser) value(depth int) *Node {
	if depth > MaxDepth {
		p.fail(p.pos, fmt.Sprintf("nested more than %d deep", MaxDepth))
		return nil
	}
	if p.pos >= len(p.src) {
		p.fail(p.pos, "a value is missing")
		return nil
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"' || c == '\'':
		start := p.pos
		s, ok := p.str()
		if !ok {
			return nil
		}
		return &Node{Kind: KindString, Start: start, End: p.pos, Str: s}
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	}
	start := p.pos
	word := p.ident()
	switch word {
	case "null":
		return &Node{Kind: KindNull, Start: start, End: p.pos}
	case "true", "false":
		return &Node{Kind: KindBool, Start: start, End: p.pos, Bool: word == "true"}
	case "Infinity", "NaN":
		return &Node{Kind: KindNumber, Start: start, End: p.pos, Num: word}
	}
	p.pos = start
	p.fail(start, "unexpected "+p.describe()+": a value must be an object, array, string, number, true, false or null")
	return nil
}

func (p *parser) object(depth int) *Node {
	n := &Node{Kind: KindObject, Start: p.pos}
	p.pos++ // {
	for {
		p.skip()
		if p.err != nil {
			return nil
		}
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			p.pos++
			n.End = p.pos
			return n
		}
		m := &Member{KeyStart: p.pos}
		if p.pos >= len(p.src) {
			p.fail(p.pos, "an object is never closed with }")
			return nil
		}
		switch c := p.src[p.pos]; {
		case c == '"' || c == '\'':
			m.Quote = c
			s, ok := p.str()
			if !ok {
				return nil
			}
			m.Key = s
		default:
			if p.pos < len(p.src) && p.src[p.pos] == '\\' {
				p.fail(p.pos, `a key written with \u escapes is not supported here: quote it`)
				return nil
			}
			m.Key = p.ident()
			if m.Key == "" {
				p.fail(p.pos, "unexpected "+p.describe()+" where a key or } belongs")
				return nil
			}
		}
		m.KeyEnd = p.pos
		p.skip()
		if p.err != nil {
			return nil
		}
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			p.fail(p.pos, "expected : after the key "+strconv.Quote(m.Key)+", found "+p.describe())
			return nil
		}
		p.pos++
		p.skip()
		if p.err != nil {
			return nil
		}
		if m.Value = p.value(depth + 1); m.Value == nil {
			return nil
		}
		n.Members = append(n.Members, m)
		p.skip()
		if p.err != nil {
			return nil
		}
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			continue
		}
		p.fail(p.pos, "expected , or } after the value of "+strconv.Quote(m.Key)+", found "+p.describe())
		return nil
	}
}

func (p *parser) array(depth int) *Node {
	n := &Node{Kind: KindArray, Start: p.pos}
	p.pos++ // [
	for {
		p.skip()
		if p.err != nil {
			return nil
		}
		if p.pos < len(p.src) && p.src[p.pos] == ']' {
			p.pos++
			n.End = p.pos
			return n
		}
		if p.pos >= len(p.src) {
			p.fail(p.pos, "an array is never closed with ]")
			return nil
		}
		v := p.value(depth + 1)
		if v == nil {
			return nil
		}
		n.Elems = append(n.Elems, v)
		p.skip()
		if p.err != nil {
			return nil
		}
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.src) && p.src[p.pos] == ']' {
			continue
		}
		p.fail(p.pos, "expected , or ] after an array element, found "+p.describe())
		return nil
	}
}

// ident reads an identifier name ($, _, letters, then also digits, combining marks and
// connectors), or "" when none starts here.
func (p *parser) ident() string {
	start := p.pos
	for p.pos < len(p.src) {
		r, size := utf8.DecodeRune(p.src[p.pos:])
		first := p.pos == start
		if r == '$' || r == '_' || unicode.IsLetter(r) ||
			(!first && (unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc) || r == 0x200C || r == 0x200D)) {
			p.pos += size
			continue
		}
		break
	}
	return string(p.src[start:p.pos])
}

// number reads a JSON5 number and keeps its text.
func (p *parser) number() *Node {
	start := p.pos
	if c := p.src[p.pos]; c == '+' || c == '-' {
		p.pos++
	}
	if w := p.ident(); w != "" {
		if w == "Infinity" || w == "NaN" {
			return &Node{Kind: KindNumber, Start: start, End: p.pos, Num: string(p.src[start:p.pos])}
		}
		p.fail(start, "a sign must be followed by a number")
		return nil
	}
	digits := func(hex bool) int {
		n := 0
		for p.pos < len(p.src) {
			c := p.src[p.pos]
			if c >= '0' && c <= '9' || hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				p.pos++
				n++
				continue
			}
			break
		}
		return n
	}
	switch {
	case p.pos+1 < len(p.src) && p.src[p.pos] == '0' && (p.src[p.pos+1] == 'x' || p.src[p.pos+1] == 'X'):
		p.pos += 2
		if digits(true) == 0 {
			p.fail(start, "a hex number needs digits after 0x")
			return nil
		}
	default:
		intStart := p.pos
		whole := digits(false)
		if whole > 1 && p.src[intStart] == '0' {
			p.fail(start, "a number may not start with 0 (octal is not JSON5)")
			return nil
		}
		frac := 0
		if p.pos < len(p.src) && p.src[p.pos] == '.' {
			p.pos++
			frac = digits(false)
		}
		if whole == 0 && frac == 0 {
			p.fail(start, "a number needs digits")
			return nil
		}
		if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
			p.pos++
			if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
				p.pos++
			}
			if digits(false) == 0 {
				p.fail(start, "an exponent needs digits")
				return nil
			}
		}
	}
	// A number runs into no identifier character: 12abc is an error, not 12.
	if p.pos < len(p.src) {
		if r, _ := utf8.DecodeRune(p.src[p.pos:]); r == '$' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			p.fail(p.pos, "unexpected "+p.describe()+" in a number")
			return nil
		}
	}
	return &Node{Kind: KindNumber, Start: start, End: p.pos, Num: string(p.src[start:p.pos])}
}

var errBadEscape = errors.New("bad escape")

// str reads a single- or double-quoted string and returns its decoded text.
func (p *parser) str() (string, bool) {
	start := p.pos
	q := p.src[p.pos]
	p.pos++
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			p.fail(start, "a string is never closed")
			return "", false
		}
		r, size := utf8.DecodeRune(p.src[p.pos:])
		switch {
		case r == rune(q):
			p.pos++
			return b.String(), true
		case r == '\n' || r == '\r':
			p.fail(p.pos, "a line break inside a string (end the line with \\ to continue it)")
			return "", false
		case r == '\\':
			if err := p.escape(&b); err != nil {
				return "", false
			}
		default:
			b.WriteRune(r)
			p.pos += size
		}
	}
}

// escape decodes one escape sequence starting at the backslash.
func (p *parser) escape(b *strings.Builder) error {
	at := p.pos
	p.pos++ // backslash
	if p.pos >= len(p.src) {
		p.fail(at, "a string is never closed")
		return errBadEscape
	}
	r, size := utf8.DecodeRune(p.src[p.pos:])
	p.pos += size
	switch r {
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'v':
		b.WriteByte('\v')
	case '0':
		if p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.fail(at, `\0 may not be followed by a digit`)
			return errBadEscape
		}
		b.WriteByte(0)
	case 'x':
		v, ok := p.hex(2)
		if !ok {
			p.fail(at, `\x needs two hex digits`)
			return errBadEscape
		}
		b.WriteRune(rune(v))
	case 'u':
		v, ok := p.hex(4)
		if !ok {
			p.fail(at, `\u needs four hex digits`)
			return errBadEscape
		}
		r := rune(v)
		if utf16.IsSurrogate(r) && p.pos+6 <= len(p.src) && p.src[p.pos] == '\\' && p.src[p.pos+1] == 'u' {
			save := p.pos
			p.pos += 2
			if lo, ok := p.hex(4); ok {
				if pair := utf16.DecodeRune(r, rune(lo)); pair != utf8.RuneError {
					b.WriteRune(pair)
					return nil
				}
			}
			p.pos = save
		}
		b.WriteRune(r) // a lone surrogate becomes U+FFFD
	case '\r':
		if p.pos < len(p.src) && p.src[p.pos] == '\n' {
			p.pos++
		}
	case '\n', 0x2028, 0x2029:
		// a line continuation: nothing
	default:
		if r >= '1' && r <= '9' {
			p.fail(at, "\\"+string(r)+" is not an escape in JSON5")
			return errBadEscape
		}
		b.WriteRune(r)
	}
	return nil
}

func (p *parser) hex(n int) (int, bool) {
	if p.pos+n > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+n]), 16, 32)
	if err != nil || strings.ContainsAny(string(p.src[p.pos:p.pos+n]), "+-") {
		return 0, false
	}
	p.pos += n
	return int(v), true
}
