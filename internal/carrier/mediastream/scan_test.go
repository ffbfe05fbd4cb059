package mediastream

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// members collects what Members reports, keys and values as strings.
func members(t *testing.T, data string) (map[string]string, error) {
	t.Helper()
	got := map[string]string{}
	err := Members([]byte(data), func(k, v []byte) { got[string(k)] = string(v) })
	return got, err
}

func TestMembers(t *testing.T) {
	got, err := members(t, ` { "event" : "media", "n":-1.5e3, "o":{"a":[1,{"b":null}]}, "t":true } `)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"event": `"media"`, "n": "-1.5e3", "o": `{"a":[1,{"b":null}]}`, "t": "true"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("member %s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("members %v", got)
	}
	for _, bad := range []string{``, `hello`, `[]`, `{"a":1} x`, `{"a":1,}`, `{"a" 1}`, `{"a":01}`, `{"a":"\q"}`,
		`{"a":"` + "\x01" + `"}`, `{"a":"\u12"}`, `{"a":[1,]}`, `{"a":tru}`, `{"a":"open}`, `{"":A}`} {
		if _, err := members(t, bad); err == nil {
			t.Errorf("accepted %q", bad)
		} else if json.Valid([]byte(bad)) && strings.HasPrefix(bad, "{") {
			t.Errorf("refused %q, which encoding/json accepts: %v", bad, err)
		}
	}
}

// A message nested a million deep is refused at once, not recursed into; a shallow one passes.
func TestDeepNestingIsRefused(t *testing.T) {
	deep := `{"x":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `}`
	if _, err := members(t, deep); err == nil {
		t.Fatal("a message nested a million deep was accepted")
	}
	ok := `{"x":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`
	if _, err := members(t, ok); err != nil {
		t.Errorf("nesting of %d: %v", MaxDepth, err)
	}
}

func TestSkipValue(t *testing.T) {
	d := []byte(`["a\"b",{"c":[]},3] tail`)
	end, err := SkipValue(d, 0)
	if err != nil || string(d[end:]) != " tail" {
		t.Errorf("SkipValue = %d (%q), %v", end, d[end:], err)
	}
	if _, err := SkipValue([]byte(`{"a":`), 0); err == nil {
		t.Error("a truncated value was accepted")
	}
}

func TestPlainString(t *testing.T) {
	for in, want := range map[string]string{`"abc"`: "abc", `""`: ""} {
		if s, ok := PlainString([]byte(in)); !ok || string(s) != want {
			t.Errorf("PlainString(%s) = %q, %v", in, s, ok)
		}
	}
	for _, in := range []string{`"a\"b"`, `"a\u0041"`, `7`, `"`, `null`, `"abc`} {
		if s, ok := PlainString([]byte(in)); ok {
			t.Errorf("PlainString(%s) = %q, want refused", in, s)
		}
	}
}

func TestUint(t *testing.T) {
	for in, want := range map[string]uint64{`4`: 4, `"4"`: 4, `0`: 0, `"18446744073709551615"`: 1<<64 - 1, `007`: 7} {
		if n, ok := Uint([]byte(in)); !ok || n != want {
			t.Errorf("Uint(%s) = %d, %v; want %d", in, n, ok, want)
		}
	}
	for _, in := range []string{``, `""`, `-1`, `1.5`, `"1e3"`, `"18446744073709551616"`, `null`, `" 4"`, `"4`} {
		if n, ok := Uint([]byte(in)); ok {
			t.Errorf("Uint(%s) = %d, want refused", in, n)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "MZ01", `t1-s"2`, "back\\slash", "tab\there", "é ünïcode", "\x00\x1f", "\xff bad utf8"} {
		got := AppendString([]byte("x"), s)
		var back string
		if err := json.Unmarshal(got[1:], &back); err != nil {
			t.Errorf("AppendString(%q) = %s: %v", s, got, err)
			continue
		}
		want, _ := json.Marshal(s) // invalid UTF-8 becomes U+FFFD both ways
		if string(got[1:]) != string(want) || got[0] != 'x' {
			t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	}
}

func TestDecodeBase64(t *testing.T) {
	want := bytes.Repeat([]byte{0x7f, 0xff, 0x00}, 53)
	src := []byte(base64.StdEncoding.EncodeToString(want))
	dst := make([]byte, 0, 1024)
	got, err := DecodeBase64(dst, src)
	if err != nil || !bytes.Equal(got, want) || &got[0] != &dst[:1][0] {
		t.Fatalf("DecodeBase64 = %x, %v (into dst's storage: %v)", got, err, err == nil && &got[0] == &dst[:1][0])
	}
	if _, err := DecodeBase64(make([]byte, 0, 10), src); err == nil {
		t.Error("a payload larger than dst was accepted")
	}
	if _, err := DecodeBase64(dst, []byte("@@@@")); err == nil {
		t.Error("bad base64 was accepted")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = DecodeBase64(dst, src) }); n != 0 {
		t.Errorf("DecodeBase64 allocates %v times", n)
	}
}

// The scanner and a member lookup allocate nothing.
func TestMembersAllocatesNothing(t *testing.T) {
	msg := []byte(`{"event":"media","sequence_number":"4","media":{"track":"inbound","chunk":"2","payload":"AAAA"}}`)
	var payload []byte
	n := testing.AllocsPerRun(100, func() {
		_ = Members(msg, func(k, v []byte) {
			if string(k) == "media" {
				payload = v
			}
		})
	})
	if n != 0 || len(payload) == 0 {
		t.Errorf("Members allocates %v times (payload %q)", n, payload)
	}
}

// FuzzMembers checks the scanner against encoding/json on any input: it accepts exactly
// the objects encoding/json accepts (within MaxDepth), and reports their members as they are.
func FuzzMembers(f *testing.F) {
	f.Add([]byte(`{"event":"media","sequenceNumber":"3","streamSid":"MZ1","media":{"payload":"AAEC"}}`))
	f.Add([]byte(`{"event":"mark","streamSid":"MZ1","mark":{"name":"t1-s1"}}`))
	f.Add([]byte(`{"event":"start","start":{"callSid":"CA1","customParameters":{"handset_token":"a.b"}}}`))
	f.Add([]byte(`{"event":"media","media":{"payload":"AA\u003d\u003d"}}`))
	f.Add([]byte(`{"a":[1,2.5e-3,true,false,null,"x"],"b":{}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		got := map[string][]byte{}
		err := Members(msg, func(k, v []byte) {
			var key string
			if json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &key) == nil {
				got[key] = v
			}
		})
		var want map[string]json.RawMessage
		jerr := json.Unmarshal(msg, &want)
		if err != nil {
			if jerr == nil && want != nil && !strings.Contains(err.Error(), "nested too deeply") {
				t.Fatalf("refused what encoding/json accepts: %q (%v)", msg, err)
			}
			return
		}
		if jerr != nil || want == nil {
			t.Fatalf("accepted what encoding/json refuses: %q (%v)", msg, jerr)
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("member %q: scanner %q, encoding/json %q", k, got[k], v)
			}
		}
	})
}
