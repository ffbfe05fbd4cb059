package plivo_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
)

const testToken = "MyAuthToken123"

// The vectors were computed by hand from the V3 rule (HMAC-SHA256, base64) outside Go.
func TestSignatureV3Vectors(t *testing.T) {
	for _, tc := range []struct {
		name, method, url string
		params            url.Values
		nonce, want       string
	}{
		{"post with query and params", http.MethodPost,
			"https://handset.example.com/plivo/answer?handset_machine=hangup&handset_call=c1",
			url.Values{"To": {"15550102000"}, "CallUUID": {"abc-1"}, "From": {"14155550100"}},
			"12345678901234567890", "UDgZotOUHCBoVY24DpsaPRVvrLqCTmRIN+aMXsuMdyg="},
		{"post without params, escaped query", http.MethodPost,
			"https://handset.example.com/plivo/transfer?to=%2B15550103000&caller_id=%2B14155550100",
			nil, "999", "sx172ms7x8NbmVoe0Zul+cW3Y86xqhjSdxQ3YkHaGoY="},
		{"get merges params into the query", http.MethodGet,
			"https://handset.example.com/plivo/answer?b=2&a=1",
			url.Values{"CallUUID": {"u1"}}, "555", "WcECrT1He4+Pf/Thg7nMPtTdXlwKwsXl/6FH71XAwjY="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plivo.SignatureV3(testToken, tc.method, tc.url, tc.params, tc.nonce); got != tc.want {
				t.Errorf("SignatureV3 = %s, want %s", got, tc.want)
			}
			if !plivo.ValidSignatureV3(testToken, tc.method, tc.url, tc.params, tc.nonce, tc.want) {
				t.Error("ValidSignatureV3 refuses the vector")
			}
		})
	}
}

// TestSignatureV3Variants: what the SDKs differ on is accepted (the "." of empty params,
// the query as sent, the trailing slash, the default port), several signatures in the
// header too; anything else changed is refused.
func TestSignatureV3Variants(t *testing.T) {
	accept := []struct {
		name, url, nonce string
		params           url.Values
		header           string
	}{
		{"the dot of empty params written", "https://handset.example.com/plivo/transfer?to=%2B15550103000&caller_id=%2B14155550100",
			"999", nil, "E1I1q8aS9XVBUu9e5tyZI6kyyAkawc7OsvIhRv0+2o4="},
		{"query signed as sent", "https://handset.example.com/plivo/hangup?b=2&a=1",
			"n1", url.Values{"X": {"1"}, "Y": {"2"}}, "E8Jc+4KSs8JCMD0Tb/8c+4UPxufOL2eN3IYpgDCbzts="},
		{"signed with the port and a slash", "https://handset.example.com/plivo/hangup",
			"n2", url.Values{"X": {"1"}}, "bsFdHjmKdf9Bo3e12uuXh+wdw3lE/GQMZSSWg0p3DTs="},
		{"several signatures, one good", "https://handset.example.com/plivo/hangup",
			"n2", url.Values{"X": {"1"}}, "AAAA, bsFdHjmKdf9Bo3e12uuXh+wdw3lE/GQMZSSWg0p3DTs=,Zm9v"},
	}
	for _, tc := range accept {
		if !plivo.ValidSignatureV3(testToken, http.MethodPost, tc.url, tc.params, tc.nonce, tc.header) {
			t.Errorf("%s: refused", tc.name)
		}
	}

	u := "https://handset.example.com/plivo/answer?handset_call=c1"
	params := url.Values{"CallUUID": {"abc-1"}, "From": {"14155550100"}}
	good := plivo.SignatureV3(testToken, http.MethodPost, u, params, "n")
	for name, ok := range map[string]bool{
		"another token":     plivo.ValidSignatureV3("OtherToken", http.MethodPost, u, params, "n", good),
		"another nonce":     plivo.ValidSignatureV3(testToken, http.MethodPost, u, params, "m", good),
		"no nonce":          plivo.ValidSignatureV3(testToken, http.MethodPost, u, params, "", good),
		"a param changed":   plivo.ValidSignatureV3(testToken, http.MethodPost, u, url.Values{"CallUUID": {"abc-2"}, "From": {"14155550100"}}, "n", good),
		"a param added":     plivo.ValidSignatureV3(testToken, http.MethodPost, u, url.Values{"CallUUID": {"abc-1"}, "From": {"14155550100"}, "Machine": {"true"}}, "n", good),
		"the query changed": plivo.ValidSignatureV3(testToken, http.MethodPost, strings.Replace(u, "c1", "c2", 1), params, "n", good),
		"another host":      plivo.ValidSignatureV3(testToken, http.MethodPost, strings.Replace(u, "handset.example.com", "evil.example.com", 1), params, "n", good),
		"empty header":      plivo.ValidSignatureV3(testToken, http.MethodPost, u, params, "n", ""),
		"not base64":        plivo.ValidSignatureV3(testToken, http.MethodPost, u, params, "n", "!!"+good),
		"too many in header": plivo.ValidSignatureV3(testToken, http.MethodPost, u, params, "n",
			strings.Repeat("AAAA,", 8)+good),
		"huge header": plivo.ValidSignatureV3(testToken, http.MethodPost, u, params, "n", strings.Repeat(" ", 2000)+good),
	} {
		if ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestSignatureAgreesWithTheFake: the fake's own signer (written apart) and the checker
// agree on random requests, which is what every callback in the suites relies on.
func TestSignatureAgreesWithTheFake(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		const letters = "abcXYZ019-_+ %&="
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		return string(b)
	}
	for i := range 300 {
		q, params := url.Values{}, url.Values{}
		for range r.IntN(4) {
			q.Set(word(), word())
		}
		for range r.IntN(6) {
			params.Set(word(), word())
		}
		u := fmt.Sprintf("https://h%d.example.com/plivo/p%d", i%3, i)
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		nonce := fmt.Sprint(r.Uint64())
		sig := plivosim.SignV3(testToken, u, params, nonce)
		if !plivo.ValidSignatureV3(testToken, http.MethodPost, u, params, nonce, sig) {
			t.Fatalf("the fake's signature of POST %s %v (nonce %s) is refused", u, params, nonce)
		}
		if got := plivo.SignatureV3(testToken, http.MethodPost, u, params, nonce); got != sig {
			t.Fatalf("POST %s %v: SignatureV3 %s, the fake's %s", u, params, got, sig)
		}
	}
}
