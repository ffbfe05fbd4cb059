package session

import (
	"context"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/voice"
)

// The forms a withheld caller ID arrives in, from carriers, PBXs and SIP trunks.
var withheldForms = []string{
	"", "   ", "anonymous", "Anonymous", "ANONYMOUS", " anonymous ", "restricted", "Restricted",
	"unknown", "UNKNOWN", "unavailable", "Unavailable", "private", "Private", "withheld", "blocked",
	"Private Number", "No Caller ID", "out-of-area",
	"+266696687", "266696687", "+2 666 966 87", "+86282452253", "+7378742833", "+2562533", "+8656696",
	"00266696687", "0000000000", "+0",
	"sip:anonymous@anonymous.invalid", "sip:Anonymous@203.0.113.7:5060", "sips:restricted@pbx.example.com",
	"sip:anonymous@anonymous.invalid;tag=abc", "sip:+266696687@sip.twilio.com",
	"sip:someone@anonymous.invalid", "sip:@pbx.example.com", "tel:+266696687",
	`"Anonymous" <sip:anonymous@anonymous.invalid>`, "Anonymous <sip:anonymous@anonymous.invalid>",
	"Unknown <sip:unknown@pbx.example.com;user=phone>",
}

// Ordinary caller IDs: numbers however written, SIP users, the browser page's ids.
var ordinaryForms = []string{
	"+15550102000", "+1 (555) 010-2000", "0015550102000", "+442071838750", "+8628245225",
	"+26669668", "sip:alice@example.com", "sip:+15550102000@sip.twilio.com",
	`"Anonymous" <sip:+15550102000@pbx.example.com>`, "browser:0123456789abcdef", "alice",
}

func TestWithheld(t *testing.T) {
	for _, id := range withheldForms {
		if !Withheld(id) {
			t.Errorf("Withheld(%q) = false, want true", id)
		}
	}
	for _, id := range ordinaryForms {
		if Withheld(id) {
			t.Errorf("Withheld(%q) = true, want false", id)
		}
	}
}

// Every withheld form gets no caller hash, hence no memory key, whatever the key setting;
// so two anonymous callers can never share a conversation.
func TestWithheldCallersGetNoHash(t *testing.T) {
	byHash, _ := ParseKeyFactory("caller_hash", "")
	tmpl, _ := ParseKeyFactory("", "acme:{carrier}:{caller_hash}")
	for _, id := range withheldForms {
		c := call("c_1", id)
		if c.CallerHash != "" || byHash(c) != "" || tmpl(c) != "" || c.Caller != CallerWithheld {
			t.Errorf("%q: hash %q, key %q, template key %q, caller %q", id, c.CallerHash, byHash(c), tmpl(c), c.Caller)
		}
		if !strings.Contains(c.Note(), "withheld") {
			t.Errorf("%q: note %q does not say the number was withheld", id, c.Note())
		}
	}
	for _, id := range ordinaryForms {
		if c := call("c_1", id); c.CallerHash == "" || c.Caller != "" || c.Note() != "" {
			t.Errorf("%q: hash %q, caller %q, note %q", id, c.CallerHash, c.Caller, c.Note())
		}
	}
	// Outbound: the person is the number dialled, withheld-looking or not.
	out := NewContext(voice.LegInfo{CallID: "c_o", Direction: voice.Outbound, From: "anonymous", To: "+15550102000"}, []byte("s"))
	if out.CallerHash == "" || out.Caller != "" {
		t.Errorf("outbound from an odd caller id: %+v", out)
	}
	out = NewContext(voice.LegInfo{CallID: "c_o", Direction: voice.Outbound, From: "+15550009999", To: "+266696687"}, []byte("s"))
	if out.CallerHash != "" || out.Caller != CallerWithheld {
		t.Errorf("outbound to a placeholder number: %+v", out)
	}
}

// Existing callers' memories are filed under their hash: it must never change.
func TestCallerHashIsStable(t *testing.T) {
	secret := []byte("s3cret")
	for number, want := range map[string]string{
		"+15550102000":          "ch_3496cf06e1fba9a1e32c9bc6",
		"+1 (555) 010-2000":     "ch_3496cf06e1fba9a1e32c9bc6",
		"browser:abc123":        "ch_35543cd5188ea619553d77b5",
		"sip:alice@example.com": "ch_55dab3be627216e71f6d4496",
	} {
		if got := CallerHash(secret, number); got != want {
			t.Errorf("CallerHash(%q) = %q, want %q (as every earlier version computed it)", number, got, want)
		}
	}
}

func TestRequireAttestation(t *testing.T) {
	secret := []byte("s")
	inbound := func(from string, a voice.Attestation) Context {
		return NewContext(voice.LegInfo{CallID: "c_1", Carrier: "twilio", Direction: voice.Inbound,
			From: from, To: "+15550009999", Attestation: a}, secret)
	}
	levels := []voice.Attestation{voice.AttestationA, voice.AttestationB, voice.AttestationC,
		voice.AttestationNone, voice.AttestationFailed, ""}
	for _, tc := range []struct {
		trust Trust
		keeps []bool // per levels: does the caller keep their hash?
	}{
		{TrustAny, []bool{true, true, true, true, true, true}},
		{TrustB, []bool{true, true, false, false, false, false}},
		{TrustA, []bool{true, false, false, false, false, false}},
		{Trust("Z"), []bool{false, false, false, false, false, false}}, // unparsed: trust nothing
	} {
		for i, a := range levels {
			c := inbound("+15550102000", a).Require(tc.trust)
			if kept := c.CallerHash != ""; kept != tc.keeps[i] {
				t.Errorf("trust %s, attestation %q: kept hash %v, want %v", tc.trust, a, kept, tc.keeps[i])
			}
			if !tc.keeps[i] && (c.Caller != CallerUnverified || !strings.Contains(c.Note(), "unverified")) {
				t.Errorf("trust %s, attestation %q: caller %q note %q", tc.trust, a, c.Caller, c.Note())
			}
		}
	}
	// Not caller IDs anyone can spoof: the browser page's cookie, and the number Handset dialled.
	if c := inbound("browser:abc", "").Require(TrustA); c.CallerHash == "" {
		t.Error("a browser caller lost their memory to the attestation rule")
	}
	out := NewContext(voice.LegInfo{CallID: "c_o", Direction: voice.Outbound, From: "+15550009999", To: "+15550102000"}, secret)
	if out.Require(TrustA).CallerHash == "" {
		t.Error("an outbound call lost its memory to the attestation rule")
	}
	// A withheld caller stays withheld.
	if c := inbound("anonymous", voice.AttestationA).Require(TrustA); c.Caller != CallerWithheld {
		t.Errorf("withheld caller became %q", c.Caller)
	}
	if c := inbound("sip:bob@example.com", "").Require(TrustB); c.CallerHash != "" {
		t.Error("an unattested SIP caller kept their memory")
	}
}

func TestParseTrust(t *testing.T) {
	for in, want := range map[string]Trust{"": TrustAny, "any": TrustAny, "ANY": TrustAny, "a": TrustA, "B": TrustB, " b ": TrustB} {
		if got, err := ParseTrust(in); err != nil || got != want {
			t.Errorf("ParseTrust(%q) = %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := ParseTrust("C"); err == nil || !strings.Contains(err.Error(), "HANDSET_CALLER_MEMORY_ATTESTATION") {
		t.Errorf("ParseTrust(C) = %v", err)
	}
}

func TestInstructionsCarryTheNote(t *testing.T) {
	const prompt = "Speak briefly."
	ctx := context.Background()
	if got := Instructions(ctx, prompt); got != prompt {
		t.Errorf("no session: %q", got)
	}
	if got := Instructions(With(ctx, call("c_1", "+15550102000")), prompt); got != prompt {
		t.Errorf("ordinary caller: %q", got)
	}
	withheld := With(ctx, call("c_1", "Anonymous"))
	if got := Instructions(withheld, prompt); !strings.HasPrefix(got, prompt+"\n\n") || !strings.Contains(got, "withheld") {
		t.Errorf("withheld caller: %q", got)
	}
	if got := Instructions(withheld, ""); !strings.HasPrefix(got, "Note from Handset") {
		t.Errorf("no prompt: %q", got)
	}
}

// A bridge client's instructions come after the runtime's prompt and before the note.
func TestInstructionsCarryABridgeClients(t *testing.T) {
	withheld := With(context.Background(), call("c_1", "Anonymous"))
	got := Instructions(WithInstructions(withheld, "You are the front desk."), "Speak briefly.")
	if !strings.HasPrefix(got, "Speak briefly.\n\nYou are the front desk.\n\nNote from Handset") {
		t.Errorf("prompt, client, note: %q", got)
	}
	if got := Instructions(WithInstructions(context.Background(), "You are the front desk."), ""); got != "You are the front desk." {
		t.Errorf("the client's alone: %q", got)
	}
}
