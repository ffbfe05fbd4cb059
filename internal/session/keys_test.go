package session

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/voice"
)

func call(id, from string) Context {
	return NewContext(voice.LegInfo{CallID: voice.CallID(id), Carrier: "twilio", Direction: voice.Inbound,
		From: from, To: "+15550009999"}, []byte("secret"))
}

func TestKeyFactories(t *testing.T) {
	a1, a2, b := call("c_1", "+1 555 010 2000"), call("c_2", "+15550102000"), call("c_3", "+15550102001")
	byHash, err := ParseKeyFactory("caller_hash", "")
	if err != nil {
		t.Fatal(err)
	}
	if byHash(a1) != byHash(a2) || byHash(a1) == byHash(b) || byHash(a1) == "" {
		t.Errorf("caller_hash: same caller %q %q, other %q", byHash(a1), byHash(a2), byHash(b))
	}
	for _, k := range []string{byHash(a1), fmt.Sprint(a1), a1.String()} {
		if strings.Contains(k, "5550102000") || strings.Contains(k, "010 2000") {
			t.Errorf("the raw number leaked into %q", k)
		}
	}
	tmpl, err := ParseKeyFactory("", "acme:{carrier}:{caller_hash}")
	if err != nil || tmpl(a1) != "acme:twilio:"+a1.CallerHash {
		t.Errorf("template: %q %v", tmpl(a1), err)
	}
	perCall, _ := ParseKeyFactory("", "call-{call_id}")
	if perCall(a1) == perCall(a2) {
		t.Error("per-call template gives two calls the same key")
	}
	static, _ := ParseKeyFactory("", "shared-memory")
	if static(a1) != "shared-memory" || static(b) != "shared-memory" {
		t.Error("static key")
	}
	none, _ := ParseKeyFactory("", "")
	if none(a1) != "" {
		t.Error("no key configured must give no key")
	}
	anonymous := call("c_4", "")
	if byHash(anonymous) != "" {
		t.Error("a caller with no number must get no key (the header is then omitted)")
	}
	for _, bad := range [][2]string{{"caller_hash", "x"}, {"phone", ""}, {"", "key-{caller}"}} {
		if _, err := ParseKeyFactory(bad[0], bad[1]); err == nil {
			t.Errorf("ParseKeyFactory(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

func TestContextTravelsInContext(t *testing.T) {
	c := call("c_1", "+15550102000")
	got, ok := From(With(context.Background(), c))
	if !ok || got.CallID != "c_1" {
		t.Fatalf("From = %+v %v", got, ok)
	}
	if caller, _ := got.RawNumbers(); caller != "+15550102000" {
		t.Error("raw number lost")
	}
	if _, ok := From(context.Background()); ok {
		t.Error("empty context has a session")
	}
}

func TestStoredKey(t *testing.T) {
	for in, want := range map[string]string{
		"agent:support:handset:ch_1": "handset:ch_1",
		"handset:ch_1":               "handset:ch_1",
		"agent:support:other":        "agent:support:other",
		"acme:ch_1":                  "acme:ch_1",
	} {
		if got := StoredKey(in); got != want {
			t.Errorf("StoredKey(%q) = %q, want %q", in, got, want)
		}
	}
}
