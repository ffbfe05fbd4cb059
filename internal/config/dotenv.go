package config

import (
	"errors"
	"strings"
)

// DotenvEntry is one assignment read from a dotenv file.
type DotenvEntry struct {
	Key   string
	Value string
	Line  int // 1-based line where the assignment starts
}

// ParseDotenv reads dotenv text: one KEY=VALUE a line, an optional leading `export `, blank lines
// and `#` comments. A value is
//
//   - unquoted: the rest of the line, trimmed; a `#` after whitespace starts a comment;
//   - single-quoted: taken literally, and may span lines;
//   - double-quoted: may span lines, with the escapes \n, \r, \t, \" and \\ (any other
//     backslash is kept as written).
//
// Only whitespace or a comment may follow a closing quote. Nothing is expanded. When a key is
// assigned twice, both entries are returned and the later one wins for the caller. name labels
// errors, which are *FileError values (joined when there are several) and never quote the line,
// since it may hold a secret.
func ParseDotenv(name string, data []byte) ([]DotenvEntry, error) {
	text := strings.TrimPrefix(string(data), "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	p := dotenvParser{name: name, text: text, line: 1}
	p.run()
	return p.entries, errors.Join(p.errs...)
}

type dotenvParser struct {
	name    string
	text    string
	pos     int // start of the current physical line
	line    int // number of that line
	entries []DotenvEntry
	errs    []error
}

func (p *dotenvParser) fail(line int, msg string) {
	p.errs = append(p.errs, &FileError{Path: p.name, Line: line, Msg: msg})
}

// nextLine moves to the physical line after the one containing offset end.
func (p *dotenvParser) nextLine(end int) {
	p.line += strings.Count(p.text[p.pos:end], "\n")
	if nl := strings.IndexByte(p.text[end:], '\n'); nl >= 0 {
		p.pos = end + nl + 1
		p.line++
	} else {
		p.pos = len(p.text)
	}
}

func (p *dotenvParser) run() {
	for p.pos < len(p.text) {
		start := p.line
		// i walks the current line; the text of the line itself ends at eol.
		eol := strings.IndexByte(p.text[p.pos:], '\n')
		if eol < 0 {
			eol = len(p.text)
		} else {
			eol += p.pos
		}
		i := skipBlanks(p.text, p.pos, eol)
		if i == eol || p.text[i] == '#' {
			p.nextLine(eol)
			continue
		}
		if rest, ok := strings.CutPrefix(p.text[i:eol], "export"); ok && rest != "" && isBlank(rest[0]) {
			if j := skipBlanks(p.text, i+len("export"), eol); j < eol && p.text[j] != '=' {
				i = j
			}
		}
		keyStart := i
		for i < eol && isNameByte(p.text[i], i == keyStart) {
			i++
		}
		key := p.text[keyStart:i]
		i = skipBlanks(p.text, i, eol)
		if key == "" || i == eol || p.text[i] != '=' {
			p.fail(start, "expected NAME=value, with a name of letters, digits and underscores")
			p.nextLine(eol)
			continue
		}
		eq := i
		i = skipBlanks(p.text, eq+1, eol)
		value, end, ok := p.value(i, eol, start, i > eq+1)
		if !ok {
			return // an unterminated quote swallowed the rest of the file
		}
		p.entries = append(p.entries, DotenvEntry{Key: key, Value: value, Line: start})
		p.nextLine(end)
	}
}

// value reads the value starting at i on a line ending at eol; spaced says blanks came between
// the = and i. It returns the value and the offset where the assignment ends (inside the last
// line it occupies).
func (p *dotenvParser) value(i, eol, start int, spaced bool) (value string, end int, ok bool) {
	if i == eol {
		return "", eol, true
	}
	switch q := p.text[i]; q {
	case '"', '\'':
		var b strings.Builder
		j := i + 1
		for ; j < len(p.text) && p.text[j] != q; j++ {
			c := p.text[j]
			if q == '"' && c == '\\' && j+1 < len(p.text) {
				if e, known := dotenvEscape(p.text[j+1]); known {
					b.WriteByte(e)
					j++
					continue
				}
			}
			b.WriteByte(c)
		}
		if j >= len(p.text) {
			p.fail(start, "a quoted value is never closed")
			return "", 0, false
		}
		// After the closing quote: only blanks, then an optional comment, to the end of the line.
		lineEnd := strings.IndexByte(p.text[j:], '\n')
		if lineEnd < 0 {
			lineEnd = len(p.text)
		} else {
			lineEnd += j
		}
		k := skipBlanks(p.text, j+1, lineEnd)
		if k < lineEnd && p.text[k] != '#' {
			p.fail(p.line+strings.Count(p.text[p.pos:j], "\n"), "unexpected text after the closing quote")
		}
		return b.String(), j, true
	}
	raw := p.text[i:eol]
	if spaced && raw[0] == '#' {
		return "", eol, true
	}
	for k := 1; k < len(raw); k++ {
		if raw[k] == '#' && isBlank(raw[k-1]) {
			raw = raw[:k]
			break
		}
	}
	return strings.TrimRight(raw, " \t\r\f\v"), eol, true
}

func dotenvEscape(c byte) (byte, bool) {
	switch c {
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case '"', '\\':
		return c, true
	}
	return 0, false
}

func skipBlanks(s string, i, end int) int {
	for i < end && isBlank(s[i]) {
		i++
	}
	return i
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' }

func isNameByte(c byte, first bool) bool {
	switch {
	case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		return true
	case '0' <= c && c <= '9':
		return !first
	}
	return false
}
