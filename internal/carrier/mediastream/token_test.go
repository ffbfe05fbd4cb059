package mediastream

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var encodings = []struct {
	name string
	enc  Encoding
}{{"json", EncodingJSON}, {"alphanumeric", EncodingAlphanumeric}}

func TestStreamTokens(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, e := range encodings {
		t.Run(e.name, func(t *testing.T) {
			tk := NewTokens("auth", "twilio", e.enc)
			mint := func(c Claims) string {
				tok, err := tk.Mint(c, now)
				if err != nil {
					t.Fatal(err)
				}
				return tok
			}
			full := Claims{CallRef: "CA1", From: "+15550001111", To: "+15550002222", Direction: "outbound-api",
				CallID: "c_0123456789abcdef0123", AnsweredBy: "human", Attestation: "A"}
			good := mint(full)
			c, err := tk.Verify(good, "CA1", now.Add(time.Second))
			want := full
			want.Expires, want.Nonce = now.Add(TokenTTL).Unix(), c.Nonce
			if err != nil || c != want || len(c.Nonce) != 2*nonceBytes {
				t.Fatalf("verify fresh token: claims %+v, err %v; want %+v", c, err, want)
			}
			if again := mint(full); again == good {
				t.Error("two tokens for the same claims are equal: no nonce")
			}
			// That a token opens one stream only is the Memory's to say (TestStreamOnce).

			one := Claims{CallRef: "CA1"}
			tests := []struct {
				name  string
				token string
				call  string
				at    time.Time
				want  error
			}{
				{"missing", "", "CA1", now, ErrTokenMissing},
				{"bad signature", flipLast(mint(one)), "CA1", now, ErrTokenForged},
				{"truncated", mint(one)[:20], "CA1", now, ErrTokenForged},
				{"signed by another secret", otherMint(t, "other", "twilio", e.enc, one, now), "CA1", now, ErrTokenForged},
				{"minted for another carrier", otherMint(t, "auth", "plivo", e.enc, one, now), "CA1", now, ErrTokenForged},
				{"other call", mint(one), "CA2", now, ErrTokenCall},
				{"expired", mint(one), "CA1", now.Add(TokenTTL + time.Second), ErrTokenExpired},
				{"huge", strings.Repeat("Z", 1<<20), "CA1", now, ErrTokenForged},
				{"not a token", "not-a-token!", "CA1", now, ErrTokenForged},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					if _, err := tk.Verify(tt.token, tt.call, tt.at); !errors.Is(err, tt.want) {
						t.Errorf("verify: err %v, want %v", err, tt.want)
					}
				})
			}
		})
	}
}

// flipLast changes a token's last character to another of its alphabet.
func flipLast(tok string) string {
	last := tok[len(tok)-1]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return tok[:len(tok)-1] + string(repl)
}

func otherMint(t *testing.T, secret, carrier string, enc Encoding, c Claims, now time.Time) string {
	tok, err := NewTokens(secret, carrier, enc).Mint(c, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Twilio's tokens keep the spelling they had before the carriers shared this package: a
// base64url JSON body with one-letter keys and a base64url HMAC-SHA256 over it, keyed by
// HMAC(auth token, "handset twilio stream token v1"). Built here by hand, one verifies.
func TestJSONTokenSpelling(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := `{"c":"CA9","f":"+1555","t":"+1666","d":"inbound","s":"B","e":1800000060,"n":"00ff"}`
	payload := base64.RawURLEncoding.EncodeToString([]byte(body))
	key := hmac.New(sha256.New, []byte("secret"))
	key.Write([]byte("handset twilio stream token v1"))
	mac := hmac.New(sha256.New, key.Sum(nil))
	mac.Write([]byte(payload))
	token := payload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	c, err := NewTokens("secret", "twilio", EncodingJSON).Verify(token, "CA9", now)
	if err != nil || c.From != "+1555" || c.Attestation != "B" || c.Nonce != "00ff" {
		t.Fatalf("a hand-built token: %+v, %v", c, err)
	}
	minted, _ := NewTokens("secret", "twilio", EncodingJSON).Mint(Claims{CallRef: "CA9"}, now)
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(minted, ".")[0])
	var keys map[string]any
	if err != nil || json.Unmarshal(raw, &keys) != nil {
		t.Fatalf("minted body %q: %v", raw, err)
	}
	for _, k := range []string{"c", "f", "t", "d", "e", "n"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("minted body %s lacks %q", raw, k)
		}
	}
}

// An alphanumeric token holds only [0-9A-Za-z] and, for E.164 numbers and ids of 64
// characters, stays within MaxAlphanumericToken (Plivo allows 512 bytes of extraHeaders
// in all); claims that cannot fit are refused, not cut.
func TestAlphanumericTokenBound(t *testing.T) {
	tk := NewTokens("auth", "plivo", EncodingAlphanumeric)
	now := time.Now()
	id := strings.Repeat("f", 64)
	worst := Claims{CallRef: id, From: "+" + strings.Repeat("9", 15), To: "+" + strings.Repeat("8", 15),
		Direction: "outbound", CallID: id, AnsweredBy: "machine_end_other_x", Attestation: "TN-Validation-Passed-A"[:1]}
	tok, err := tk.Mint(worst, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) > MaxAlphanumericToken {
		t.Errorf("worst-case token is %d characters, over %d", len(tok), MaxAlphanumericToken)
	}
	for _, b := range []byte(tok) {
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z') {
			t.Fatalf("token %q holds %q", tok, b)
		}
	}
	if c, err := tk.Verify(tok, id, now); err != nil || c.CallID != id || c.To != worst.To {
		t.Errorf("worst-case token: %+v, %v", c, err)
	}
	t.Logf("worst-case alphanumeric token: %d characters", len(tok))

	long := worst
	long.AnsweredBy = strings.Repeat("x", 200)
	if _, err := tk.Mint(long, now); !errors.Is(err, ErrTokenTooLong) {
		t.Errorf("claims too long for the bound: err %v", err)
	}
	long.AnsweredBy = strings.Repeat("x", 256)
	if _, err := tk.Mint(long, now); !errors.Is(err, ErrTokenTooLong) {
		t.Errorf("a claim over 255 bytes: err %v", err)
	}
	if _, err := tk.Verify("0"+tok, id, now); !errors.Is(err, ErrTokenForged) {
		t.Errorf("a token with a leading zero digit: err %v", err)
	}
}

// FuzzAlphanumericToken: no input panics the decoder, and no change of one character of
// a good token verifies.
func FuzzAlphanumericToken(f *testing.F) {
	tk := NewTokens("auth", "plivo", EncodingAlphanumeric)
	now := time.Unix(1_800_000_000, 0)
	f.Add("1", uint(0), byte('A'))
	f.Add("zzzz", uint(40), byte('0'))
	f.Fuzz(func(t *testing.T, token string, pos uint, b byte) {
		_, _ = tk.Verify(token, "abc", now)
		good, err := tk.Mint(Claims{CallRef: "abc", From: "+15550001111"}, now)
		if err != nil {
			t.Fatal(err)
		}
		i := int(pos % uint(len(good)))
		bad := good[:i] + string(b) + good[i+1:]
		if c, err := tk.Verify(bad, "abc", now); err == nil && bad != good {
			t.Fatalf("%q (one character of a good token changed) verified as %+v", bad, c)
		}
	})
}
