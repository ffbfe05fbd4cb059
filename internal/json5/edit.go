package json5

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Number is a number as written in the document (decoded values keep the text, so that
// 0x10, 16 and 16.0 stay what they were).
type Number string

// Obj is an object to write, its members in this order.
type Obj []KV

// KV is one member of an Obj.
type KV struct {
	Key   string
	Value any // Obj, []string, []any, string, bool, int, Number or nil
}

// Value decodes the node: map[string]any (the last of a repeated key wins, as in
// JavaScript), []any, string, Number, bool or nil.
func (n *Node) Value() any {
	switch n.Kind {
	case KindObject:
		m := make(map[string]any, len(n.Members))
		for _, mem := range n.Members {
			m[mem.Key] = mem.Value.Value()
		}
		return m
	case KindArray:
		a := make([]any, len(n.Elems))
		for i, e := range n.Elems {
			a[i] = e.Value()
		}
		return a
	case KindString:
		return n.Str
	case KindNumber:
		return Number(n.Num)
	case KindBool:
		return n.Bool
	}
	return nil
}

// Doc is a document being edited. Each edit splices text into the source, parses the
// result again and checks that it means the old document with exactly that change.
type Doc struct {
	src  []byte
	root *Node
	st   style
}

// NewDoc parses src for editing.
func NewDoc(src []byte) (*Doc, error) {
	root, err := Parse(src)
	if err != nil {
		return nil, err
	}
	d := &Doc{src: src, root: root}
	d.st = detectStyle(src, root)
	return d, nil
}

// Bytes is the document's text now.
func (d *Doc) Bytes() []byte { return d.src }

// Root is the document's value now.
func (d *Doc) Root() *Node { return d.root }

// Find returns the node at path (object keys from the root), or nil when a key is
// missing. A key written twice on the way is an error: which one counts is easy to get
// wrong, so it is left for a person.
func (d *Doc) Find(path ...string) (*Node, error) {
	n := d.root
	for i, k := range path {
		if n.Kind != KindObject {
			return nil, fmt.Errorf("%s is %s, not an object", dotted(path[:i]), article(n.Kind))
		}
		ms := n.Lookup(k)
		switch len(ms) {
		case 0:
			return nil, nil
		case 1:
			n = ms[0].Value
		default:
			return nil, fmt.Errorf("%s is written %d times", dotted(path[:i+1]), len(ms))
		}
	}
	return n, nil
}

// Set makes path hold v: the value there is replaced, or the missing keys are added to
// the deepest object that exists on the path.
func (d *Doc) Set(path []string, v any) error {
	if len(path) == 0 {
		return fmt.Errorf("json5: Set needs a path")
	}
	n := d.root
	for i, k := range path {
		if n.Kind != KindObject {
			return fmt.Errorf("%s is %s, not an object", dotted(path[:i]), article(n.Kind))
		}
		ms := n.Lookup(k)
		if len(ms) > 1 {
			return fmt.Errorf("%s is written %d times", dotted(path[:i+1]), len(ms))
		}
		if len(ms) == 0 {
			// Wrap the value in the keys still missing, and add it here.
			val := v
			for j := len(path) - 1; j > i; j-- {
				val = Obj{{path[j], val}}
			}
			start, end, text := d.memberInsertion(n, k, val)
			return d.apply(start, end, text, func(root any) any { return setIn(root, path, toGeneric(v)) })
		}
		if i == len(path)-1 {
			old := ms[0].Value
			if reflect.DeepEqual(old.Value(), toGeneric(v)) {
				return nil
			}
			text := d.st.render(v, lineIndent(d.src, ms[0].KeyStart), d.multiline(old))
			return d.apply(old.Start, old.End, text, func(root any) any { return setIn(root, path, toGeneric(v)) })
		}
		n = ms[0].Value
	}
	return nil
}

// Append adds v at the end of the array at path.
func (d *Doc) Append(path []string, v any) error {
	n, err := d.Find(path...)
	if err != nil {
		return err
	}
	if n == nil || n.Kind != KindArray {
		return fmt.Errorf("%s is not an array", dotted(path))
	}
	start, end, text := d.elemInsertion(n, v)
	return d.apply(start, end, text, func(root any) any {
		return updateIn(root, path, func(a any) any { return append(a.([]any), toGeneric(v)) })
	})
}

// apply replaces src[start:end] with text, parses the result and checks that it decodes
// to want(the old value).
func (d *Doc) apply(start, end int, text string, want func(any) any) error {
	next := make([]byte, 0, len(d.src)+len(text))
	next = append(next, d.src[:start]...)
	next = append(next, text...)
	next = append(next, d.src[end:]...)
	root, err := Parse(next)
	if err != nil {
		return fmt.Errorf("json5: the edit did not parse (%v): nothing changed", err)
	}
	if !reflect.DeepEqual(root.Value(), want(d.root.Value())) {
		return fmt.Errorf("json5: the edit changed more than asked: nothing changed")
	}
	d.src, d.root = next, root
	return nil
}

// memberInsertion is where and what to write to add key: v to object o.
func (d *Doc) memberInsertion(o *Node, key string, v any) (start, end int, text string) {
	var last int = -1
	if len(o.Members) > 0 {
		last = o.Members[len(o.Members)-1].Value.End
	}
	return d.insertion(o, last, func(indent string, multi bool) string {
		return d.st.key(key) + ": " + d.st.render(v, indent, multi)
	})
}

// elemInsertion is where and what to write to add v to array a.
func (d *Doc) elemInsertion(a *Node, v any) (start, end int, text string) {
	last := -1
	if len(a.Elems) > 0 {
		last = a.Elems[len(a.Elems)-1].End
	}
	return d.insertion(a, last, func(indent string, multi bool) string { return d.st.render(v, indent, multi) })
}

// insertion adds an entry to the object or array c whose last entry ends at last (-1:
// none): on a line of its own after the last entry when that one ends its line, else on
// the same line.
func (d *Doc) insertion(c *Node, last int, entry func(indent string, multi bool) string) (int, int, string) {
	src := d.src
	closing := c.End - 1
	if last < 0 {
		inner := string(src[c.Start+1 : closing])
		if strings.ContainsAny(inner, "\n\r") {
			indent := lineIndent(src, c.Start) + d.st.unit
			return c.Start + 1, c.Start + 1, d.st.nl + indent + entry(indent, true) + d.st.comma()
		}
		if strings.TrimSpace(inner) == "" {
			return c.Start + 1, closing, " " + entry("", false) + " "
		}
		return c.Start + 1, c.Start + 1, " " + entry("", false) + ","
	}
	// Is there a comma after the last entry?
	p := &parser{src: src, pos: last}
	p.skip()
	comma := p.err == nil && p.pos < closing && src[p.pos] == ','
	afterEntry := last
	if comma {
		afterEntry = p.pos + 1
	}
	indent := lineIndent(src, entryStart(c))
	if eol := restOfLine(src, afterEntry, closing); eol >= 0 && d.multiline(c) {
		text := d.st.nl + indent + entry(indent, true)
		if comma || d.st.trailing {
			text += ","
		}
		if comma {
			return eol, eol, text
		}
		// The comma goes straight after the last value, before any comment on its line.
		return last, eol, "," + string(src[last:eol]) + text
	}
	if comma {
		return afterEntry, afterEntry, " " + entry("", false) + ","
	}
	return last, last, ", " + entry("", false)
}

// entryStart is where the first entry of a container with entries starts.
func entryStart(c *Node) int {
	if c.Kind == KindObject {
		return c.Members[0].KeyStart
	}
	return c.Elems[0].Start
}

// restOfLine returns where the line that from holds ends (the line break's offset) when
// only white space and comments follow from there, else -1.
func restOfLine(src []byte, from, limit int) int {
	i := from
	for i < limit {
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case isLineEnd(r):
			return i
		case r == ' ' || r == '\t' || (isSpace(r) && !isLineEnd(r)):
			i += size
		case r == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < limit {
				r, size := utf8.DecodeRune(src[i:])
				if isLineEnd(r) {
					return i
				}
				i += size
			}
			return -1
		case r == '/' && i+1 < len(src) && src[i+1] == '*':
			end := bytes.Index(src[i+2:limit], []byte("*/"))
			if end < 0 || bytes.ContainsAny(src[i:i+2+end], "\n\r") {
				return -1
			}
			i += 2 + end + 2
		default:
			return -1
		}
	}
	return -1
}

// multiline reports whether a container is written over several lines.
func (d *Doc) multiline(n *Node) bool {
	if n.Kind != KindObject && n.Kind != KindArray {
		return true
	}
	return bytes.ContainsAny(d.src[n.Start:n.End], "\n\r")
}

// lineIndent is the white space that starts the line holding offset at.
func lineIndent(src []byte, at int) string {
	start := bytes.LastIndexAny(src[:at], "\n\r") + 1
	end := start
	for end < len(src) && (src[end] == ' ' || src[end] == '\t') {
		end++
	}
	return string(src[start:end])
}

// style is how the document writes things, so that added text looks like the rest.
type style struct {
	keyQuote byte // 0: identifiers where they can be
	strQuote byte
	trailing bool // a comma after the last entry of multi-line objects and arrays
	unit     string
	nl       string
}

func (s style) comma() string {
	if s.trailing {
		return ","
	}
	return ""
}

func detectStyle(src []byte, root *Node) style {
	st := style{keyQuote: '"', strQuote: '"', unit: "  ", nl: "\n"}
	if strings.Contains(string(src), "\r\n") {
		st.nl = "\r\n"
	}
	var bare, single, double, sSingle, sDouble int
	unitFound := false
	var walk func(n *Node)
	walk = func(n *Node) {
		entries := len(n.Members) + len(n.Elems)
		if entries > 0 {
			var last, first int
			if n.Kind == KindObject {
				last, first = n.Members[entries-1].Value.End, n.Members[0].KeyStart
			} else {
				last, first = n.Elems[entries-1].End, n.Elems[0].Start
			}
			p := &parser{src: src, pos: last}
			p.skip()
			if p.err == nil && p.pos < len(src) && src[p.pos] == ',' {
				st.trailing = true
			}
			if !unitFound && bytes.ContainsAny(src[n.Start:first], "\n\r") {
				open, inner := lineIndent(src, n.Start), lineIndent(src, first)
				if len(inner) > len(open) && strings.HasPrefix(inner, open) {
					st.unit, unitFound = inner[len(open):], true
				}
			}
		}
		for _, m := range n.Members {
			switch m.Quote {
			case 0:
				bare++
			case '\'':
				single++
			default:
				double++
			}
			walk(m.Value)
		}
		for _, e := range n.Elems {
			walk(e)
		}
		if n.Kind == KindString {
			if src[n.Start] == '\'' {
				sSingle++
			} else {
				sDouble++
			}
		}
	}
	walk(root)
	switch {
	case bare > 0:
		st.keyQuote = 0
	case single > double:
		st.keyQuote = '\''
	}
	if sSingle > sDouble {
		st.strQuote = '\''
	}
	return st
}

// key writes an object key.
func (s style) key(k string) string {
	if s.keyQuote == 0 && isIdentifier(k) {
		return k
	}
	q := s.keyQuote
	if q == 0 {
		q = s.strQuote
	}
	return quote(k, q)
}

func isIdentifier(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// render writes a value whose line starts with indent; multi allows several lines.
func (s style) render(v any, indent string, multi bool) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case Number:
		return string(v)
	case string:
		return quote(v, s.strQuote)
	case []string:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = x
		}
		return s.render(a, indent, multi)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = s.render(x, indent+s.unit, false)
		}
		inline := "[" + strings.Join(parts, ", ") + "]"
		if !multi || len(v) == 0 || (flat(v) && len(indent)+len(inline) <= 96) {
			return inline
		}
		for i, x := range v {
			parts[i] = s.render(x, indent+s.unit, true)
		}
		return s.block("[", "]", parts, indent)
	case Obj:
		parts := make([]string, len(v))
		for i, kv := range v {
			parts[i] = s.key(kv.Key) + ": " + s.render(kv.Value, indent+s.unit, false)
		}
		if len(v) == 0 {
			return "{}"
		}
		inline := "{ " + strings.Join(parts, ", ") + " }"
		if !multi || (flatObj(v) && len(inline) <= 40) {
			return inline
		}
		for i, kv := range v {
			parts[i] = s.key(kv.Key) + ": " + s.render(kv.Value, indent+s.unit, true)
		}
		return s.block("{", "}", parts, indent)
	}
	panic(fmt.Sprintf("json5: cannot write %T", v))
}

func (s style) block(open, close string, parts []string, indent string) string {
	var b strings.Builder
	b.WriteString(open)
	for i, p := range parts {
		b.WriteString(s.nl + indent + s.unit + p)
		if i < len(parts)-1 || s.trailing {
			b.WriteString(",")
		}
	}
	b.WriteString(s.nl + indent + close)
	return b.String()
}

func flat(a []any) bool {
	for _, x := range a {
		switch x.(type) {
		case Obj, []any, []string:
			return false
		}
	}
	return true
}

func flatObj(o Obj) bool {
	for _, kv := range o {
		switch kv.Value.(type) {
		case Obj, []any, []string:
			return false
		}
	}
	return true
}

// quote writes s as a JSON5 string in quotes q.
func quote(s string, q byte) string {
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x2028 || r == 0x2029 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// toGeneric is what v decodes to once written.
func toGeneric(v any) any {
	switch v := v.(type) {
	case int:
		return Number(strconv.Itoa(v))
	case []string:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = x
		}
		return a
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = toGeneric(x)
		}
		return a
	case Obj:
		m := make(map[string]any, len(v))
		for _, kv := range v {
			m[kv.Key] = toGeneric(kv.Value)
		}
		return m
	}
	return v
}

// setIn returns root with path set to v, creating objects on the way (root is a fresh
// decode, so changing it in place is fine).
func setIn(root any, path []string, v any) any {
	return updateIn(root, path, func(any) any { return v })
}

func updateIn(root any, path []string, f func(any) any) any {
	if len(path) == 0 {
		return f(root)
	}
	m, ok := root.(map[string]any)
	if !ok {
		m = map[string]any{}
	}
	m[path[0]] = updateIn(m[path[0]], path[1:], f)
	return m
}

func dotted(path []string) string {
	if len(path) == 0 {
		return "the document"
	}
	return strings.Join(path, ".")
}

func article(k Kind) string {
	if k == KindArray || k == KindObject {
		return "an " + k.String()
	}
	return "a " + k.String()
}
