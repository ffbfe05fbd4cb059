// Package browser is the browser channel: the call page served at / and its media socket
// at /browser/ws. A browser call is a leg like a phone call (same engine, same journal);
// only the wire differs.
//
// The socket protocol (docs/browser.md):
//
//   - server → page, text: {"type":"ready","call":ID,"rate":16000} once the call is admitted;
//     {"type":"mark","name":N} after audio; {"type":"clear"} to drop queued audio;
//     {"type":"event","event":{…}} for a subset of journal events (transcripts, agent text,
//     playout, barge-in, call end), from which the page shows the transcript and the state.
//   - server → page, binary: agent audio, 16-bit little-endian PCM at 16 kHz, mono.
//   - page → server, binary: microphone audio in the same format, any length.
//   - page → server, text: {"type":"mark","name":N} when N has played (or was cleared),
//     {"type":"dtmf","digit":D}, {"type":"hangup"}.
//
// The page is a secure context only on localhost or behind HTTPS, because browsers grant
// the microphone nowhere else. Each browser gets a random caller id in a cookie, so the
// caller-hash session key finds the same agent memory when the same browser calls again.
//
// The page, its files and its socket answer only to the Host names Handset is reached by,
// the socket only to pages of that origin, and with a token configured only to browsers
// that opened the token link (access.go). Browser calls have their own cap and a rate per
// client address (limit.go).
package browser

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/edge"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/hostcheck"
	"github.com/handset-voice/handset/internal/voice"
)

// Format is what a browser call carries both ways: wideband PCM.
var Format = audio.Format{Encoding: audio.PCM16, Rate: 16000}

// Carrier is the leg's name in the journal and the logs.
const Carrier = "browser"

// callerCookie keeps a browser's caller id between calls.
const callerCookie = "handset_caller"

//go:embed page
var pageFiles embed.FS

// Admit starts a call on leg and returns a channel closed when it ends, or an error when
// the call is refused (too many calls, draining).
type Admit func(leg voice.Leg) (<-chan struct{}, error)

// Options configure the channel.
type Options struct {
	Admit  Admit
	Logger *slog.Logger // nil discards
	// Callee is the "To" of browser calls (for session templates); default "browser".
	Callee string

	// Listen is the configured listen address (HANDSET_LISTEN). Its name, when it is one,
	// is a Host the page answers to; the address each connection arrives on always is,
	// with localhost, 127.0.0.1 and [::1] when that is loopback.
	Listen string
	// Hosts are further Host names the page answers to, each "name" (any port) or
	// "name:port": the public URL's host and HANDSET_BROWSER_HOSTS.
	Hosts []string
	// Token, when set, is the secret a browser must present once (/?token=...) to use
	// the page (HANDSET_BROWSER_TOKEN).
	Token string
	// SecureCookie marks the access cookie Secure (the page is served over HTTPS).
	SecureCookie bool
	// MaxCalls caps browser calls at once (HANDSET_BROWSER_MAX_CALLS); 0 for no cap.
	MaxCalls int
	// Rate limits new calls per client address; zero means DefaultRate.
	Rate Rate
	// TrustedProxies (HANDSET_TRUSTED_PROXIES) are the peers whose X-Forwarded-For names
	// the client the rate counts against.
	TrustedProxies []netip.Prefix
	// Clock times the rate; nil is the wall clock.
	Clock clock.Clock
}

// Channel serves the call page and admits browser calls.
type Channel struct {
	opts   Options
	log    *slog.Logger
	hosts  hostcheck.Hosts
	access []byte // tokenMAC of the token; nil when the page needs none
	limit  *limiter
}

// New returns a Channel.
func New(opts Options) *Channel {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Callee == "" {
		opts.Callee = Carrier
	}
	c := &Channel{opts: opts, log: log, limit: newLimiter(opts.MaxCalls, opts.Rate, opts.Clock)}
	var bad []string
	c.hosts, bad = hostcheck.New(opts.Listen, opts.Hosts)
	for _, h := range bad {
		log.Warn("browser page: ignored a host name that is not one", "host", h)
	}
	if opts.Token != "" {
		c.access = tokenMAC(opts.Token)
	}
	return c
}

// Register adds the page and the socket to mux, each behind the Host check.
func (c *Channel) Register(mux *http.ServeMux) {
	static, _ := fs.Sub(pageFiles, "page")
	files := http.FileServerFS(static)
	mux.Handle("GET /{$}", c.checkHost(http.HandlerFunc(c.page)))
	mux.Handle("GET /browser/", c.checkHost(http.StripPrefix("/browser/", noSniff(files))))
	mux.Handle("GET /browser/ws", c.checkHost(http.HandlerFunc(c.socket)))
	mux.Handle("GET /favicon.ico", c.checkHost(http.HandlerFunc(serveFavicon)))
}

// serveFavicon answers the browser's icon request, which would otherwise be a 404 in the
// log of every page load.
func serveFavicon(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "image/x-icon")
	w.Header().Set("Cache-Control", "public, max-age=604800")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(favicon())
}

// favicon is the page's icon, a white H on the Call button's green in a rounded square:
// a 32×32 PNG in an ICO container (browsers take PNG inside ICO), drawn here rather than
// kept as a binary file.
var favicon = sync.OnceValue(func() []byte {
	const size, ss = 32, 4 // pixels; subsamples per pixel and axis, for smooth corners
	green, white := [3]float64{0x1f, 0x7a, 0x3a}, [3]float64{0xff, 0xff, 0xff}
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			var in, h float64
			for i := range ss * ss {
				px, py := float64(x)+(float64(i%ss)+0.5)/ss, float64(y)+(float64(i/ss)+0.5)/ss
				if inRoundedSquare(px, py, size, 7) {
					in++
					if inH(px, py) {
						h++
					}
				}
			}
			if in == 0 {
				continue
			}
			var c [3]uint8
			for k := range c {
				c[k] = uint8(green[k] + (white[k]-green[k])*h/in)
			}
			img.SetNRGBA(x, y, color.NRGBA{c[0], c[1], c[2], uint8(255 * in / (ss * ss))})
		}
	}
	var pngData bytes.Buffer
	_ = png.Encode(&pngData, img)
	// ICONDIR (reserved, type 1 = icon, one image), then its ICONDIRENTRY: width, height,
	// no palette, reserved, 1 plane, 32 bits a pixel, the PNG's size and offset (after
	// these 6 + 16 bytes).
	ico := binary.LittleEndian.AppendUint16(nil, 0)
	ico = binary.LittleEndian.AppendUint16(ico, 1)
	ico = binary.LittleEndian.AppendUint16(ico, 1)
	ico = append(ico, size, size, 0, 0)
	ico = binary.LittleEndian.AppendUint16(ico, 1)
	ico = binary.LittleEndian.AppendUint16(ico, 32)
	ico = binary.LittleEndian.AppendUint32(ico, uint32(pngData.Len()))
	ico = binary.LittleEndian.AppendUint32(ico, 6+16)
	return append(ico, pngData.Bytes()...)
})

// inRoundedSquare: (x, y) is inside the size×size square with corners of radius r.
func inRoundedSquare(x, y, size, r float64) bool {
	dx := max(r-x, 0, x-(size-r))
	dy := max(r-y, 0, y-(size-r))
	return dx*dx+dy*dy <= r*r
}

// inH: (x, y) is on the H: two stems and the bar between them.
func inH(x, y float64) bool {
	stems := (x >= 9 && x < 13 || x >= 19 && x < 23) && y >= 8 && y < 24
	bar := x >= 13 && x < 19 && y >= 14 && y < 18
	return stems || bar
}

func noSniff(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

// page serves the call page and gives a new browser its caller id. With a token, the
// token link grants access and a browser without access is refused.
func (c *Channel) page(w http.ResponseWriter, r *http.Request) {
	if c.access != nil && r.URL.Query().Has("token") {
		if !c.tokenOK(r.URL.Query().Get("token")) {
			c.log.Info("browser page: refused a wrong access token")
			refuse(w, http.StatusForbidden, "This access link is not valid: its token is not this Handset's HANDSET_BROWSER_TOKEN.")
			return
		}
		c.grantAccess(w)
		return
	}
	if !c.hasAccess(r) {
		refuse(w, http.StatusForbidden, "This call page needs its access link: open it once as /?token=<HANDSET_BROWSER_TOKEN>, and this browser is let in from then on.")
		return
	}
	if _, ok := callerID(r); !ok {
		http.SetCookie(w, &http.Cookie{
			Name: callerCookie, Value: newCallerID(), Path: "/",
			MaxAge: int((365 * 24 * time.Hour).Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; media-src 'self' blob:")
	page, err := pageFiles.ReadFile("page/index.html")
	if err != nil {
		http.Error(w, "page missing from this build", http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(page)
}

// callerID is the browser's id from its cookie, if it has a well-formed one.
func callerID(r *http.Request) (string, bool) {
	ck, err := r.Cookie(callerCookie)
	if err != nil || len(ck.Value) != 32 || strings.Trim(ck.Value, "0123456789abcdef") != "" {
		return "", false
	}
	return ck.Value, true
}

func newCallerID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// socket accepts the media WebSocket and runs the call on it.
func (c *Channel) socket(w http.ResponseWriter, r *http.Request) {
	// Same-origin only, with an Origin required (browsers always send one): another site
	// must not place calls from a visitor's browser.
	if !c.sameOrigin(r) {
		c.log.Info("browser page: refused a socket from another origin", "origin", voice.Clip(r.Header.Get("Origin"), 80))
		refuse(w, http.StatusForbidden, "The call socket takes only the call page's own origin.")
		return
	}
	if !c.hasAccess(r) {
		refuse(w, http.StatusForbidden, "The call socket needs the page's access cookie: open the access link /?token=<HANDSET_BROWSER_TOKEN> first.")
		return
	}
	// sameOrigin has checked the Origin against the accepted hosts, which the library's
	// own check (Origin equal to Host, byte for byte) would repeat more strictly than
	// default ports allow.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the client
	}
	conn.SetReadLimit(maxMessage)
	release, refused := c.limit.admit(edge.Client(r, c.opts.TrustedProxies))
	if refused != "" {
		c.log.Warn("refused browser call", "reason", refused)
		conn.Close(websocket.StatusTryAgainLater, voice.Clip(refused, 120))
		return
	}
	defer release()
	id, ok := callerID(r)
	if !ok {
		id = newCallerID() // no cookie: a caller nobody will recognise again
	}
	leg := newLeg(conn, voice.LegInfo{
		CallID: voice.NewCallID(), Carrier: Carrier, Direction: voice.Inbound,
		From: "browser:" + id, To: c.opts.Callee, Format: Format,
		EchoCancelled: true, // getUserMedia captures with the browser's echo canceller
	})
	done, err := c.opts.Admit(leg)
	if err != nil {
		c.log.Warn("refused browser call", "err", err)
		conn.Close(websocket.StatusTryAgainLater, voice.Clip(err.Error(), 120))
		return
	}
	<-done // the call owns the connection until it ends
}
