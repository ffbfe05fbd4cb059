// Package edge is what every connection to Handset's HTTP server meets before a handler:
// timeouts on each part of an exchange, a cap on the connections one client address may
// hold open, and the process's open-file limit raised as far as it goes. Together they keep
// idle and slow clients from using up the file descriptors genuine webhooks need.
//
// WebSocket upgrades (Twilio media streams, the browser call socket) leave both the HTTP
// timeouts and the per-address count once the handler takes the connection over: a call
// keeps its socket for as long as it lasts, under the call's own rules.
package edge

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Timeouts bound how long a connection may take over each part of an HTTP exchange.
type Timeouts struct {
	// ReadHeader is how long a client has to send a request's line and headers, from the
	// moment the server starts reading it.
	ReadHeader time.Duration
	// Read is how long it has for the whole request, body included: a body trickled a
	// byte at a time is cut off here.
	Read time.Duration
	// Write is how long a handler and its response may take from the end of the request
	// headers. A handler that streams for longer extends its own deadline
	// (http.ResponseController), as the profiling endpoints do.
	Write time.Duration
	// Idle is how long a kept-alive connection may wait for its next request.
	Idle time.Duration
}

// DefaultTimeouts are the timeouts `handset serve` uses.
//
//   - 10 s for headers: Twilio and browsers send theirs at once.
//   - 30 s for the whole request: webhook bodies are at most 64 KiB.
//   - 60 s to answer: the longest handler (a transfer or handoff request) waits 10 s.
//   - 120 s idle: longer than the 60 s a load balancer usually keeps an idle connection to
//     its backend, so Handset never closes one just as the balancer reuses it.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 60 * time.Second, Idle: 120 * time.Second}
}

// Server returns an http.Server for h with timeouts t, whose connections limiter l counts
// (nil: none). Serve it on l.Listener(ln).
func Server(h http.Handler, t Timeouts, l *Limiter, log *slog.Logger) *http.Server {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			if st != http.StateHijacked {
				return
			}
			// A WebSocket: net/http clears the deadlines it set when a handler hijacks
			// the connection, and this makes sure of it whatever the Go version, since
			// neither the server nor the WebSocket library would ever move them again.
			_ = c.SetDeadline(time.Time{})
			if l != nil {
				l.hijacked(c)
			}
		},
	}
	if log != nil {
		hs.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	}
	return hs
}

// connKey is the request context key of the connection a request came on.
type connKey struct{}

// Vouch tells the connection cap that the handler knows r's client (it presented a token
// of the agent bridge, say), whose own limits apply instead: r's connection stops
// counting against its address, and for the next 10 minutes that address's new
// connections are not counted either. A voice platform streams hundreds of turns at once
// from a few addresses, each on a connection of its own. A request that did not come
// through a Server with a Limiter is left as it is.
func Vouch(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*conn); ok {
		c.releaseOnce()
		c.l.vouch(c.key)
	}
}
