package browser

import (
	"bytes"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFavicon: the page names its icon and /favicon.ico serves it (a 32×32 PNG in an ICO,
// cached), so a page load logs no 404; the page's Content-Security-Policy is unchanged.
func TestFavicon(t *testing.T) {
	mux := http.NewServeMux()
	New(Options{}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/x-icon" ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "max-age=") {
		t.Fatalf("GET /favicon.ico: %d %v", resp.StatusCode, resp.Header)
	}
	if !bytes.HasPrefix(body, []byte{0, 0, 1, 0, 1, 0, 32, 32}) || len(body) < 22 {
		t.Fatalf("not a one-image 32×32 ICO: % x", body[:min(len(body), 22)])
	}
	img, err := png.Decode(bytes.NewReader(body[22:]))
	if err != nil || img.Bounds().Dx() != 32 || img.Bounds().Dy() != 32 {
		t.Fatalf("the ICO's image: %v %v", err, img)
	}
	if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
		t.Error("the corner is not transparent (no rounded corner)")
	}
	if r, g, b, _ := img.At(16, 4).RGBA(); r>>8 != 0x1f || g>>8 != 0x7a || b>>8 != 0x3a {
		t.Errorf("the background is %x %x %x, want the Call button's green", r>>8, g>>8, b>>8)
	}

	resp, err = http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `<link rel="icon" href="/favicon.ico"`) {
		t.Error("the page does not link its icon")
	}
	if csp := resp.Header.Get("Content-Security-Policy"); csp != "default-src 'self'; connect-src 'self'; media-src 'self' blob:" {
		t.Errorf("Content-Security-Policy changed: %q", csp)
	}
}
