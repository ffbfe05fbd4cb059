package plivo_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/mediastream"
	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
)

const public = "https://handset.example.com"

// signed is a POST to path as plivosim signs it.
func signed(path string, form url.Values, nonce string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set(plivo.NonceHeader, nonce)
	r.Header.Set(plivo.SignatureHeader, plivosim.SignV3(testToken, public+path, form, nonce))
	return r
}

// TestVerifyRefusesReplaysAndForgeries: V3 has no timestamp, so a nonce is good once.
func TestVerifyRefusesReplaysAndForgeries(t *testing.T) {
	m := carriertest.NewMemory()
	v := plivo.Verifier{AuthToken: testToken, PublicURL: public, Memory: m}
	form := url.Values{"CallUUID": {callUUID}, "CallStatus": {"completed"}}
	path := plivo.HangupPath + "?handset_call=c1"
	check := func(name string, r *http.Request, want error) {
		t.Helper()
		if err := v.Verify(httptest.NewRecorder(), r); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	check("signed", signed(path, form, "111"), nil)
	check("replayed", signed(path, form, "111"), plivo.ErrReplay)
	check("another nonce", signed(path, form, "112"), nil)

	unsigned := signed(path, form, "113")
	unsigned.Header.Del(plivo.SignatureHeader)
	check("unsigned", unsigned, plivo.ErrSignature)
	check("unsigned, same nonce, now signed", signed(path, form, "113"), nil) // a forgery burns no nonce

	tampered := signed(path, form, "114")
	tampered.URL.RawQuery = "handset_call=c2"
	tampered.RequestURI = path[:strings.Index(path, "?")] + "?handset_call=c2"
	check("query changed", tampered, plivo.ErrSignature)

	body := signed(path, form, "115")
	body.Body = http.NoBody
	check("body dropped", body, plivo.ErrSignature)

	big := signed(path, url.Values{"X": {strings.Repeat("a", 70<<10)}}, "116")
	check("oversized", big, plivo.ErrSignature)

	m.Fail(errors.New("store down"))
	check("memory down", signed(path, form, "117"), mediastream.ErrMemoryUnavailable)
}
