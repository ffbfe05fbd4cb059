package digestauth

import (
	"testing"
	"time"
)

// FuzzParseCredentials: hostile Authorization headers never panic the parser or the
// check, and the check never admits one (the fuzzer cannot know the password's hash).
func FuzzParseCredentials(f *testing.F) {
	f.Add(`Digest username="pbx", realm="handset", nonce="AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", uri="sip:+1555@handset", response="0123", algorithm=MD5, qop=auth, nc=00000001, cnonce="c0ffee"`)
	f.Add(`Digest username="a\"b",realm=r,nc=00000001,qop="auth"`)
	f.Add(`Digest a="b\`)
	f.Add(`Basic cGJ4OnMzY3JldA==`)
	v, err := New(Config{Realm: "handset", Username: "pbx", Password: "s3cret"})
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, auth string) {
		c, err := ParseCredentials(auth)
		if err == nil && len(c.Username)+len(c.Nonce)+len(c.Response) > len(auth) {
			t.Fatalf("fields longer than the header: %+v", c)
		}
		if err := v.Check(auth, "INVITE", "call-1", now); err == nil {
			t.Fatalf("admitted %q", auth)
		}
	})
}
