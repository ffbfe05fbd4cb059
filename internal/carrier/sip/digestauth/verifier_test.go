package digestauth

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The published examples: RFC 2617 3.5 (MD5) and RFC 7616 3.9.1 (SHA-256).
func TestResponseMatchesThePublishedExamples(t *testing.T) {
	for _, tc := range []struct {
		alg, realm, password, nonce, cnonce, want string
	}{
		{"MD5", "testrealm@host.com", "Circle Of Life", "dcd98b7102dd2f0e8b11d0f600bfb0c093", "0a4f113b",
			"6629fae49393a05397450978507c4ef1"},
		{"SHA-256", "http-auth@example.org", "Circle of Life", "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
			"f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"},
	} {
		a, ok := algorithmOf(tc.alg)
		if !ok {
			t.Fatalf("no %s", tc.alg)
		}
		got := a.response("Mufasa", tc.realm, tc.password, "GET",
			Credentials{Nonce: tc.nonce, URI: "/dir/index.html", NC: "00000001", CNonce: tc.cnonce, QOP: "auth"})
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.alg, got, tc.want)
		}
	}
}

// answer is what a caller who knows password sends to challenge (one of Challenges).
func answer(t *testing.T, challenge, user, password, method, uri string) string {
	t.Helper()
	ch, err := ParseCredentials(challenge) // a challenge has the same name=value syntax
	if err != nil {
		t.Fatal(err)
	}
	a, _ := algorithmOf(ch.Algorithm)
	c := Credentials{Username: user, Realm: ch.Realm, Nonce: ch.Nonce, URI: uri, NC: "00000001", CNonce: "c0ffee", QOP: "auth"}
	c.Response = a.response(user, ch.Realm, password, method, c)
	return fmt.Sprintf(`Digest username="%s", realm="%s", nonce="%s", uri="%s", response="%s", algorithm=%s, qop=auth, nc=%s, cnonce="%s"`,
		c.Username, c.Realm, c.Nonce, c.URI, c.Response, a.name, c.NC, c.CNonce)
}

func TestCheck(t *testing.T) {
	v, err := New(Config{Realm: "handset", Username: "pbx", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	chals := v.Challenges("call-1", now, false)
	if len(chals) != 2 || !strings.Contains(chals[0], "algorithm=MD5") || !strings.Contains(chals[1], "algorithm=SHA-256") {
		t.Fatalf("challenges %q, want MD5 then SHA-256", chals)
	}
	for _, ch := range chals {
		good := answer(t, ch, "pbx", "s3cret", "INVITE", "sip:+1555@handset")
		if err := v.Check(good, "INVITE", "call-1", now.Add(2*time.Second)); err != nil {
			t.Errorf("the right answer to %q: %v", ch, err)
		}
		for name, tc := range map[string]struct {
			auth, method, callID string
			at                   time.Time
			want                 error
		}{
			"none":           {"", "INVITE", "call-1", now, ErrNoCredentials},
			"wrong password": {answer(t, ch, "pbx", "guess", "INVITE", "sip:+1555@handset"), "INVITE", "call-1", now, ErrRefused},
			"wrong user":     {answer(t, ch, "admin", "s3cret", "INVITE", "sip:+1555@handset"), "INVITE", "call-1", now, ErrRefused},
			"another call":   {good, "INVITE", "call-2", now, ErrRefused},
			"another method": {good, "BYE", "call-1", now, ErrRefused},
			"late":           {good, "INVITE", "call-1", now.Add(DefaultMaxAge + time.Second), ErrStale},
			"malformed":      {`Digest username="pbx`, "INVITE", "call-1", now, ErrRefused},
			"basic":          {"Basic cGJ4OnMzY3JldA==", "INVITE", "call-1", now, ErrRefused},
			"forged nonce":   {strings.Replace(good, `nonce="`, `nonce="A`, 1), "INVITE", "call-1", now, ErrRefused},
		} {
			if err := v.Check(tc.auth, tc.method, tc.callID, tc.at); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v, want %v", name, err, tc.want)
			}
		}
	}
	// A late answer with the wrong password is refused, not called stale: only a caller
	// who knows the password learns that it was late.
	late := answer(t, chals[0], "pbx", "guess", "INVITE", "sip:x@y")
	if err := v.Check(late, "INVITE", "call-1", now.Add(time.Hour)); !errors.Is(err, ErrRefused) {
		t.Errorf("a late wrong answer: %v, want ErrRefused", err)
	}
	if ch := v.Challenges("call-1", now, true); !strings.Contains(ch[0], "stale=true") {
		t.Errorf("a stale challenge %q says nothing of it", ch[0])
	}
	// Another process (another key) issued the nonce: refused.
	other, _ := New(Config{Realm: "handset", Username: "pbx", Password: "s3cret"})
	if err := other.Check(answer(t, chals[0], "pbx", "s3cret", "INVITE", "sip:x@y"), "INVITE", "call-1", now); !errors.Is(err, ErrRefused) {
		t.Errorf("a nonce of another key: %v, want ErrRefused", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []Config{{Realm: "r", Username: "u"}, {Realm: "r", Password: "p"}, {Username: "u", Password: "p"},
		{Realm: `a"b`, Username: "u", Password: "p"}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

func TestParseCredentials(t *testing.T) {
	c, err := ParseCredentials(`digest username="a\"b", realm=r, nc=00000001 , qop="auth",x-extra="1,2"`)
	if err != nil || c.Username != `a"b` || c.Realm != "r" || c.NC != "00000001" || c.QOP != "auth" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{`Digest realm="a", realm="b"`, `Digest realm="a" nonce="b"`, `Digest =x`, `Digest a=`,
		`Digest a="b\`, "Digest a=\"b\r\nc\"", strings.Repeat("x", 3000), "Digest " + strings.Repeat("a=b,", 30)} {
		if _, err := ParseCredentials(bad); err == nil {
			t.Errorf("ParseCredentials(%q) accepted", bad)
		}
	}
}
