package twiliocaller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// DefaultProbeWait is how long DialStream waits for Handset to react to start.
const DefaultProbeWait = 2 * time.Second

// StreamProbe describes one attempt to open a Media Streams WebSocket outside a normal
// call, for negative tests: a missing, forged or replayed per-call token or signature.
type StreamProbe struct {
	URL string // the URL to dial (ws:// or wss://)
	// SignURL is the URL the signature covers, as written in the TwiML. Default URL.
	SignURL   string
	AuthToken string
	// Signature overrides X-Twilio-Signature: nil signs correctly over SignURL, a pointer
	// to "" sends no header, anything else is sent as given.
	Signature *string
	// AccountSid, CallSid and StreamSid go into start; empty ones are generated.
	AccountSid, CallSid, StreamSid string
	// Parameters is start.customParameters, e.g. a per-call token taken from TwiML.
	Parameters map[string]string
	// SkipStart sends neither connected nor start after the upgrade.
	SkipStart bool
	// Wait is how long to wait after start for Handset to close. Default DefaultProbeWait.
	Wait       time.Duration
	HTTPClient *http.Client // default http.DefaultClient
}

// ProbeResult is how Handset answered a StreamProbe.
type ProbeResult struct {
	// Status is the HTTP status of the upgrade answer: 101 when it was accepted.
	Status int
	Body   string // the body of a refused upgrade
	// Closed is true when Handset closed the socket within Wait, with Code and Reason
	// (Code is -1 when the connection dropped without a close frame). When Handset kept
	// the stream open, the probe sent stop and closed it normally itself.
	Closed   bool
	Code     websocket.StatusCode
	Reason   string
	Received []string // text messages Handset sent before the end
}

// Accepted reports whether Handset completed the upgrade and kept the stream open.
func (r ProbeResult) Accepted() bool { return r.Status == http.StatusSwitchingProtocols && !r.Closed }

// DialStream attempts a stream as described and reports what Handset did. The error is
// only for failures to reach Handset at all; a refused upgrade is a result.
func DialStream(ctx context.Context, p StreamProbe) (ProbeResult, error) {
	if p.SignURL == "" {
		p.SignURL = p.URL
	}
	if p.AccountSid == "" {
		p.AccountSid = NewSid("AC")
	}
	if p.CallSid == "" {
		p.CallSid = NewSid("CA")
	}
	if p.StreamSid == "" {
		p.StreamSid = NewSid("MZ")
	}
	if p.Wait <= 0 {
		p.Wait = DefaultProbeWait
	}
	if p.HTTPClient == nil {
		p.HTTPClient = http.DefaultClient
	}
	sig := Signature(p.AuthToken, p.SignURL, nil)
	if p.Signature != nil {
		sig = *p.Signature
	}
	conn, err := dialStream(ctx, p.HTTPClient, p.URL, sig)
	if err != nil {
		var de *StreamDialError
		if errors.As(err, &de) && de.Status != 0 {
			return ProbeResult{Status: de.Status, Body: de.Body}, nil
		}
		return ProbeResult{}, err
	}
	defer conn.CloseNow()
	res := ProbeResult{Status: http.StatusSwitchingProtocols, Code: -1}

	// The read loop is a goroutine so the probe can still send stop and close normally
	// when Handset keeps the stream open; it ends when the socket closes.
	type readResult struct {
		msgs []string
		err  error
	}
	readDone := make(chan readResult, 1) // buffered: the reader never blocks on exit
	go func() {
		var r readResult
		for {
			typ, data, err := conn.Read(context.WithoutCancel(ctx))
			if err != nil {
				r.err = err
				readDone <- r
				return
			}
			if typ == websocket.MessageText {
				r.msgs = append(r.msgs, string(data))
			}
		}
	}()

	if !p.SkipStart {
		if err := conn.Write(ctx, websocket.MessageText, connectedMsg()); err == nil {
			_ = conn.Write(ctx, websocket.MessageText, startMsg(1, p.StreamSid, p.AccountSid, p.CallSid, p.Parameters))
		}
	}
	wait := time.NewTimer(p.Wait)
	defer wait.Stop()
	var r readResult
	select {
	case r = <-readDone:
		res.Closed = true
	case <-wait.C:
	case <-ctx.Done():
	}
	if !res.Closed {
		_ = conn.Write(ctx, websocket.MessageText, stopMsg(2, p.StreamSid, p.AccountSid, p.CallSid))
		_ = conn.Close(websocket.StatusNormalClosure, "")
		r = <-readDone
	}
	res.Received = r.msgs
	if res.Closed {
		var ce websocket.CloseError
		if errors.As(r.err, &ce) {
			res.Code, res.Reason = ce.Code, ce.Reason
		}
	}
	if err := ctx.Err(); err != nil && !res.Closed {
		return res, fmt.Errorf("twiliocaller: probe: %w", context.Cause(ctx))
	}
	return res, nil
}
