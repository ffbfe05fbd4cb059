package telnyx

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"testing"
	"time"
)

// signed signs body at ts the way Telnyx does: Ed25519 over "ts|body".
func signed(t *testing.T, priv ed25519.PrivateKey, ts string, body []byte) string {
	t.Helper()
	return base64.StdEncoding.EncodeToString(ed25519.Sign(priv, append([]byte(ts+"|"), body...)))
}

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func TestVerifySignature(t *testing.T) {
	pub, priv := newKey(t)
	_, otherPriv := newKey(t)
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"data":{"event_type":"call.initiated","id":"e1"}}`)
	good := signed(t, priv, ts, body)
	stale := strconv.FormatInt(now.Add(-301*time.Second).Unix(), 10)
	future := strconv.FormatInt(now.Add(301*time.Second).Unix(), 10)
	edge := strconv.FormatInt(now.Add(-300*time.Second).Unix(), 10)

	cases := []struct {
		name    string
		ts, sig string
		body    []byte
		want    error // nil: accepted
	}{
		{"good", ts, good, body, nil},
		{"at the tolerance's edge", edge, signed(t, priv, edge, body), body, nil},
		{"unsigned", ts, "", body, ErrUnsigned},
		{"no timestamp", "", good, body, ErrUnsigned},
		{"wrong key", ts, signed(t, otherPriv, ts, body), body, ErrBadSignature},
		{"re-serialised body", ts, good, []byte(`{"data": {"event_type": "call.initiated", "id": "e1"}}`), ErrBadSignature},
		{"another timestamp", strconv.FormatInt(now.Unix()-1, 10), good, body, ErrBadSignature},
		{"stale", stale, signed(t, priv, stale, body), body, ErrStaleTimestamp},
		{"future", future, signed(t, priv, future, body), body, ErrStaleTimestamp},
		{"non-numeric timestamp", "soon", signed(t, priv, "soon", body), body, ErrBadTimestamp},
		{"signed timestamp", "+" + ts, signed(t, priv, "+"+ts, body), body, ErrBadTimestamp},
		{"huge timestamp", "99999999999999999999999", good, body, ErrBadTimestamp},
		{"signature not base64", ts, "%%%", body, ErrBadSignature},
		{"signature too short", ts, base64.StdEncoding.EncodeToString([]byte("short")), body, ErrBadSignature},
		{"signature too long", ts, good + good, body, ErrBadSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := VerifySignature(pub, c.ts, c.sig, c.body, now)
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestVerifySignatureWithoutAKey(t *testing.T) {
	_, priv := newKey(t)
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	if err := VerifySignature(nil, ts, signed(t, priv, ts, nil), nil, now); !errors.Is(err, ErrBadPublicKey) {
		t.Fatalf("err = %v, want ErrBadPublicKey", err)
	}
}

func TestParsePublicKey(t *testing.T) {
	pub, _ := newKey(t)
	enc := base64.StdEncoding.EncodeToString(pub)
	got, err := ParsePublicKey(" " + enc + "\n")
	if err != nil || !got.Equal(pub) {
		t.Fatalf("ParsePublicKey = %x, %v; want %x", got, err, pub)
	}
	for _, bad := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(pub[:31]), base64.StdEncoding.EncodeToString(append(pub, 0))} {
		if _, err := ParsePublicKey(bad); !errors.Is(err, ErrBadPublicKey) {
			t.Errorf("ParsePublicKey(%q) err = %v, want ErrBadPublicKey", bad, err)
		}
	}
}
