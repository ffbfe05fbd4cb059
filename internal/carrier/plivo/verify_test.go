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

// TestTransferFetchesSignedXML: Plivo's fetch of the transfer XML is V3-checked; the
// number comes from the signed URL, so an unsigned, re-addressed or replayed fetch is
// refused.
func TestTransferFetchesSignedXML(t *testing.T) {
	h := plivo.ServeTransfer(plivo.Verifier{AuthToken: testToken, PublicURL: public, Memory: carriertest.NewMemory()})
	path := plivo.TransferPath + "?" + url.Values{plivo.ToParam: {"+15550103000"}, plivo.CallerIDParam: {"+14155550100"}}.Encode()
	form := url.Values{"CallUUID": {callUUID}}
	serve := func(r *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := serve(signed(path, form, "1")); w.Code != http.StatusOK ||
		!strings.Contains(w.Body.String(), `<Dial callerId="+14155550100"><Number>+15550103000</Number></Dial>`) {
		t.Errorf("signed fetch: %d %s", w.Code, w.Body)
	}
	if w := serve(signed(path, form, "1")); w.Code != http.StatusForbidden {
		t.Errorf("replayed fetch: %d", w.Code)
	}
	unsigned := signed(path, form, "2")
	unsigned.Header.Del(plivo.SignatureHeader)
	if w := serve(unsigned); w.Code != http.StatusForbidden {
		t.Errorf("unsigned fetch: %d", w.Code)
	}
	readdressed := signed(path, form, "3")
	other := plivo.TransferPath + "?" + url.Values{plivo.ToParam: {"+19005550000"}}.Encode()
	readdressed.URL, _ = url.Parse(other)
	readdressed.RequestURI = other
	if w := serve(readdressed); w.Code != http.StatusForbidden {
		t.Errorf("fetch to another number under the first's signature: %d", w.Code)
	}
	if w := serve(signed(plivo.TransferPath+"?to=call+me", form, "4")); w.Code != http.StatusBadRequest {
		t.Errorf("a signed fetch without a number: %d", w.Code)
	}
}
