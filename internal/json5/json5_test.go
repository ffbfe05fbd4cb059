package json5

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestParseJSON5: every form JSON5 adds to JSON decodes to what JavaScript's JSON5 reader
// gives, and each value knows its bytes.
func TestParseJSON5(t *testing.T) {
	src := "\uFEFF// a comment\n{\n" +
		"  unquoted: 'and you can quote me on that',\n" +
		"  singleQuotes: 'I can use \"double quotes\" here',\n" +
		"  lineBreaks: \"Look, Mom! \\\nNo \\\\n's!\",\n" +
		"  hexadecimal: 0xdecaf,\n" +
		"  leadingDecimalPoint: .8675309, andTrailing: 8675309.,\n" +
		"  positiveSign: +1,\n" +
		"  trailingComma: 'in objects', andIn: ['arrays',],\n" +
		"  \"backwardsCompatible\": \"with JSON\",\n" +
		"  /* a block\n     comment */ $dollar_1: [Infinity, -Infinity, NaN, null, true, false],\n" +
		"  escapes: '\\x41\\u00e9\\uD83D\\uDE00\\0\\v\\q',\n" +
		"  'é': 1e3,\n" +
		"}\n"
	n, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"unquoted":            "and you can quote me on that",
		"singleQuotes":        `I can use "double quotes" here`,
		"lineBreaks":          `Look, Mom! No \n's!`,
		"hexadecimal":         Number("0xdecaf"),
		"leadingDecimalPoint": Number(".8675309"),
		"andTrailing":         Number("8675309."),
		"positiveSign":        Number("+1"),
		"trailingComma":       "in objects",
		"andIn":               []any{"arrays"},
		"backwardsCompatible": "with JSON",
		"$dollar_1":           []any{Number("Infinity"), Number("-Infinity"), Number("NaN"), nil, true, false},
		"escapes":             "Aé😀\x00\vq",
		"é":                   Number("1e3"),
	}
	if got := n.Value(); !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n%#v\nwant\n%#v", got, want)
	}
	for _, m := range n.Members {
		if m.Key == "hexadecimal" && string(src[m.Value.Start:m.Value.End]) != "0xdecaf" {
			t.Errorf("hexadecimal's span is %q", src[m.Value.Start:m.Value.End])
		}
		if m.Key == "é" && (m.Quote != '\'' || src[m.KeyStart:m.KeyEnd] != "'é'") {
			t.Errorf("key span %q quote %q", src[m.KeyStart:m.KeyEnd], m.Quote)
		}
	}
}

// TestParseErrors: what is not JSON5 is refused with the place and the reason.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"", "line 1, column 1: a value is missing"},
		{"{a: 1,,}", "line 1, column 7: unexpected ',' where a key or } belongs"},
		{"{a 1}", "expected : after the key \"a\""},
		{"{a: 1 b: 2}", `expected , or } after the value of "a"`},
		{"[1 2]", "expected , or ] after an array element"},
		{"{\n  a: 'x\n'}", "line 2, column 8: a line break inside a string"},
		{"{a: 012}", "may not start with 0"},
		{"{a: 0x}", "hex number needs digits"},
		{"{a: 1e}", "exponent needs digits"},
		{"{a: 12abc}", "in a number"},
		{"{a: +}", "a number needs digits"},
		{"{a: +x}", "a sign must be followed by a number"},
		{"{a: '\\1'}", `\1 is not an escape`},
		{"{a: '\\xZZ'}", `\x needs two hex digits`},
		{"{a: '\\u12'}", `\u needs four hex digits`},
		{"{a: undefined}", "a value must be an object, array, string, number"},
		{"/* open", "a /* comment is never closed"},
		{"{a: 1} x", "after the document's value"},
		{"{a: 'never", "a string is never closed"},
		{"{a: 1", `expected , or } after the value of "a", found end of text`},
		{"{", "an object is never closed"},
		{"[1,", "an array is never closed"},
		{"{\\u0061: 1}", "quote it"},
		{"{a: \"\xff\"}", "not valid UTF-8"},
		{strings.Repeat("[", MaxDepth+5), "nested more than"},
	} {
		_, err := Parse([]byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", c.src, err, c.want)
		}
	}
}

// TestEditKeepsTheRest: an edit changes only what it is asked to, in the document's own
// style (bare or quoted keys, trailing commas, indentation, line endings), and leaves
// every comment and every other byte where it was.
func TestEditKeepsTheRest(t *testing.T) {
	endpoint := []string{"gateway", "http", "endpoints", "chatCompletions", "enabled"}
	for _, c := range []struct {
		name, src string
		edit      func(d *Doc) error
		want      string
	}{{
		name: "a missing branch, JSON5 style",
		src: `// my gateway
{
  gateway: {
    port: 18789, // the port
    auth: { mode: "token", token: "x" },
  },
}
`,
		edit: func(d *Doc) error { return d.Set(endpoint, true) },
		want: `// my gateway
{
  gateway: {
    port: 18789, // the port
    auth: { mode: "token", token: "x" },
    http: {
      endpoints: {
        chatCompletions: { enabled: true },
      },
    },
  },
}
`,
	}, {
		name: "strict JSON stays JSON",
		src:  "{\n  \"gateway\": {\n    \"port\": 1\n  }\n}\n",
		edit: func(d *Doc) error { return d.Set(endpoint, true) },
		want: "{\n  \"gateway\": {\n    \"port\": 1,\n    \"http\": {\n      \"endpoints\": {\n        \"chatCompletions\": { \"enabled\": true }\n      }\n    }\n  }\n}\n",
	}, {
		name: "a value replaced in place",
		src:  "{gateway: {http: {endpoints: {chatCompletions: {enabled: false /* off for now */}}}}}",
		edit: func(d *Doc) error { return d.Set(endpoint, true) },
		want: "{gateway: {http: {endpoints: {chatCompletions: {enabled: true /* off for now */}}}}}",
	}, {
		name: "the same value: no change",
		src:  "{gateway: {http: {endpoints: {chatCompletions: {enabled: true}}}}}",
		edit: func(d *Doc) error { return d.Set(endpoint, true) },
		want: "{gateway: {http: {endpoints: {chatCompletions: {enabled: true}}}}}",
	}, {
		name: "a one-line object gets the member on its line",
		src:  "{ agents: { entries: { a: {} } } }",
		edit: func(d *Doc) error {
			return d.Set([]string{"agents", "entries", "voice"}, Obj{{"name", "Voice"}})
		},
		want: `{ agents: { entries: { a: {}, voice: { name: "Voice" } } } }`,
	}, {
		name: "a comment after the last member stays on its line, the comma before it",
		src:  "{\n\tagents: {\n\t\tentries: {\n\t\t\tsupport: {} // the desk\n\t\t}\n\t}\n}",
		edit: func(d *Doc) error {
			return d.Set([]string{"agents", "entries", "voice"}, Obj{{"tools", Obj{{"deny", []string{"group:fs"}}}}})
		},
		want: "{\n\tagents: {\n\t\tentries: {\n\t\t\tsupport: {}, // the desk\n\t\t\tvoice: {\n\t\t\t\ttools: {\n\t\t\t\t\tdeny: [\"group:fs\"]\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n}",
	}, {
		name: "an empty multi-line object, CRLF line ends, single quotes",
		src:  "{\r\n  a: 'x',\r\n  b: {\r\n  },\r\n}",
		edit: func(d *Doc) error { return d.Set([]string{"b", "c d"}, "y") },
		want: "{\r\n  a: 'x',\r\n  b: {\r\n    'c d': 'y',\r\n  },\r\n}",
	}, {
		name: "an empty one-line object",
		src:  `{"a": {}}`,
		edit: func(d *Doc) error { return d.Set([]string{"a", "b"}, 1) },
		want: `{"a": { "b": 1 }}`,
	}, {
		name: "appending to an array with a trailing comma and a comment",
		src:  "{\n  deny: [\n    'exec', // no shell\n  ],\n}",
		edit: func(d *Doc) error { return d.Append([]string{"deny"}, "group:fs") },
		want: "{\n  deny: [\n    'exec', // no shell\n    'group:fs',\n  ],\n}",
	}, {
		name: "appending to an empty array",
		src:  "{deny: []}",
		edit: func(d *Doc) error { return d.Append([]string{"deny"}, "group:fs") },
		want: "{deny: [ \"group:fs\" ]}",
	}, {
		name: "a quoted string with quotes inside",
		src:  "{b: {}}",
		edit: func(d *Doc) error { return d.Set([]string{"a"}, "say \"hi\"\n\\") },
		want: `{b: {}, a: "say \"hi\"\n\\"}`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDoc([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.edit(d); err != nil {
				t.Fatal(err)
			}
			if got := string(d.Bytes()); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// TestEditRefusesWhatIsUnclear: a key written twice, or a value of the wrong kind on the
// path, is an error that names it, and the document stays as it was.
func TestEditRefusesWhatIsUnclear(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"{gateway: {}, gateway: {}}", "gateway is written 2 times"},
		{"{gateway: true}", "gateway is a boolean, not an object"},
		{"[]", "the document is an array, not an object"},
	} {
		d, err := NewDoc([]byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		err = d.Set([]string{"gateway", "http"}, true)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.src, err, c.want)
		}
		if string(d.Bytes()) != c.src {
			t.Errorf("%s: changed to %s", c.src, d.Bytes())
		}
	}
}

// FuzzParse: no input panics; JSON (in UTF-8) is read as encoding/json reads it; and any object
// takes an added member and an added array element, with the rest of its meaning kept
// (each edit checks that itself) and its text before the first change untouched.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a": [1, 2, {"b": null}]}`, "{a: 'x', // c\n b: [1,],}",
		"{\n  gateway: {\n    port: 1, /* p */\n  },\n}\n", `"str"`, `0x1F`, `{a: {b: {c: {}}}}`,
		"{\r\n\t'k': -Infinity,\r\n}", `{"a":1,"a":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		n, err := Parse(src)
		if json.Valid(src) && utf8.Valid(src) { // encoding/json passes invalid UTF-8 in strings; we refuse it
			if err != nil {
				t.Fatalf("valid JSON refused: %v", err)
			}
			var want any
			dec := json.NewDecoder(bytes.NewReader(src))
			dec.UseNumber()
			if dec.Decode(&want) == nil && !reflect.DeepEqual(fromJSON(want), n.Value()) {
				t.Fatalf("JSON decoded differently:\n%#v\n%#v", fromJSON(want), n.Value())
			}
		}
		if err != nil || n.Kind != KindObject {
			return
		}
		d, err := NewDoc(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Set([]string{"handset", "added"}, Obj{{"deny", []string{"group:fs"}}, {"on", true}}); err != nil {
			if !strings.Contains(err.Error(), "written") && !strings.Contains(err.Error(), "not an object") {
				t.Fatalf("Set: %v", err)
			}
			return
		}
		if err := d.Append([]string{"handset", "added", "deny"}, "group:runtime"); err != nil {
			t.Fatalf("Append: %v", err)
		}
		first := 0
		for first < len(src) && first < len(d.Bytes()) && src[first] == d.Bytes()[first] {
			first++
		}
		if first < n.Start {
			t.Fatalf("the edit changed text before the document's value (at %d)", first)
		}
	})
}

// fromJSON turns encoding/json's json.Number into ours.
func fromJSON(v any) any {
	switch v := v.(type) {
	case json.Number:
		return Number(v)
	case map[string]any:
		for k, x := range v {
			v[k] = fromJSON(x)
		}
	case []any:
		for i, x := range v {
			v[i] = fromJSON(x)
		}
	}
	return v
}
