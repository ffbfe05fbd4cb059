package register

import (
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
)

// okFor is a registrar's 200 OK listing Handset's binding with contactExpires (none when
// empty) and an Expires header (none when empty).
func okFor(contactExpires, expires string) *sip.Response {
	raw := "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bK1\r\n" +
		"From: <sip:handset@fake.test>;tag=a\r\nTo: <sip:handset@fake.test>;tag=b\r\nCall-ID: c\r\nCSeq: 1 REGISTER\r\n" +
		"Contact: <sip:phone@192.0.2.7:5060>;expires=3600\r\n"
	if contactExpires != "" {
		raw += "Contact: <sip:handset@127.0.0.1:5070>;expires=" + contactExpires + "\r\n"
	}
	if expires != "" {
		raw += "Expires: " + expires + "\r\n"
	}
	raw += "Content-Length: 0\r\n\r\n"
	msg, err := sip.ParseMessage([]byte(raw))
	if err != nil {
		return nil
	}
	res, _ := msg.(*sip.Response)
	return res
}

func grantedFor(res *sip.Response, asked time.Duration) time.Duration {
	r := New(nil, Options{Contact: sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: "handset", Host: "127.0.0.1", Port: 5070}}})
	return r.granted(res, asked)
}

func TestGranted(t *testing.T) {
	const asked = 300 * time.Second
	for _, tc := range []struct {
		contact, header string
		want            time.Duration
	}{
		{"120", "", 120 * time.Second}, // Handset's own binding, not the other's 3600
		{"", "90", 90 * time.Second},   // no expires of its own: the header
		{"60", "90", 60 * time.Second}, // the binding's own wins
		{"", "", asked},                // nothing said: what was asked
		{"3600", "", asked},            // never longer than asked
		{"0", "", asked},               // nonsense is not a lifetime
		{"-5", "x", asked},             // nor is this
		{"99999999999999999999", "", asked},
	} {
		if got := grantedFor(okFor(tc.contact, tc.header), asked); got != tc.want {
			t.Errorf("contact expires %q, Expires %q: granted %v, want %v", tc.contact, tc.header, got, tc.want)
		}
	}
}

// The registrar writes the expiries: whatever they hold, the granted lifetime is
// positive and never more than asked.
func FuzzGranted(f *testing.F) {
	for _, seed := range [][2]string{{"120", ""}, {"", "90"}, {"0", "0"}, {"1e9", " 7 "}, {"-1", "+5"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, contactExpires, expires string) {
		res := okFor(contactExpires, expires)
		if res == nil {
			return // not a message the parser takes
		}
		const asked = 300 * time.Second
		if got := grantedFor(res, asked); got <= 0 || got > asked {
			t.Fatalf("granted %v for %q, %q", got, contactExpires, expires)
		}
	})
}
