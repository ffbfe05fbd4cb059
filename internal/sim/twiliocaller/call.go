package twiliocaller

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/sim/phone"
)

// readLimit bounds one message from Handset; Twilio accepts media chunks of any size.
const readLimit = 4 << 20

// writeTimeout bounds one write to Handset; a Handset that stops reading for this long
// loses the call, as it would lose a real Twilio stream. A variable only so a test can
// shorten it.
var writeTimeout = phone.DefaultWriteTimeout

// Call is one simulated call into Handset: the carrier-neutral phone (*phone.Call, whose
// methods it has) on Twilio's wire, with Twilio's ids. All methods are safe for
// concurrent use.
type Call struct {
	*phone.Call
	opts      Options
	twiml     StreamTwiML
	streamSid string
}

// StreamDialError reports a Media Streams WebSocket that could not be opened; Status and
// Body are Handset's answer when it refused the upgrade.
type StreamDialError struct {
	URL    string
	Status int
	Body   string
	Err    error
}

func (e *StreamDialError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("twiliocaller: stream %s refused with %d; body %q: %v", e.URL, e.Status, e.Body, e.Err)
	}
	return fmt.Sprintf("twiliocaller: stream %s: %v", e.URL, e.Err)
}

func (e *StreamDialError) Unwrap() error { return e.Err }

// Dial places a call into Handset as Twilio would: it posts the signed voice webhook,
// requires a 200 answer with TwiML <Connect><Stream>, opens the WebSocket (signed over the
// TwiML's stream URL), sends connected and start, and starts streaming silence at real-time
// pace. ctx bounds the whole call: cancelling it drops the stream without a stop message.
// Errors are *WebhookError or *StreamDialError when Handset answered but badly.
func Dial(ctx context.Context, opts Options) (*Call, error) {
	o := opts.withDefaults()
	resp, err := PostWebhook(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, &WebhookError{Status: resp.Status, Body: string(resp.Body)}
	}
	tw, err := ParseTwiML(resp.Body)
	if err == nil {
		err = CheckStreamURL(tw.URL, o.InsecureStreamURL)
	}
	if err != nil {
		return nil, &WebhookError{Status: resp.Status, Body: string(resp.Body), Err: err}
	}
	return connect(ctx, o, tw)
}

// connect opens the stream tw names (its URL already checked), sends connected and start,
// and starts the call's goroutines. o has its defaults.
func connect(ctx context.Context, o Options, tw StreamTwiML) (*Call, error) {
	dialURL, err := o.streamDialURL(tw.URL)
	if err != nil {
		return nil, &StreamDialError{URL: tw.URL, Err: err}
	}
	conn, err := dialStream(ctx, o.HTTPClient, dialURL, Signature(o.AuthToken, tw.URL, nil))
	if err != nil {
		return nil, err
	}
	c, err := start(ctx, o, tw, conn)
	if err != nil {
		return nil, err
	}
	o.Logger.Debug("twilio call connected", "call_sid", o.CallSid, "stream_sid", c.streamSid, "stream_url", tw.URL)
	return c, nil
}

// dialStream opens a Media Streams WebSocket with X-Twilio-Signature set to sig, or
// without the header when sig is empty.
func dialStream(ctx context.Context, client *http.Client, dialURL, sig string) (*websocket.Conn, error) {
	h := http.Header{}
	if sig != "" {
		h.Set(SignatureHeader, sig)
	}
	h.Set("User-Agent", "Twilio.TmeWs/1.0")
	conn, resp, err := websocket.Dial(ctx, dialURL, &websocket.DialOptions{HTTPClient: client, HTTPHeader: h})
	if err != nil {
		e := &StreamDialError{URL: dialURL, Err: err}
		if resp != nil {
			e.Status = resp.StatusCode
			if resp.Body != nil {
				var b bytes.Buffer
				_, _ = b.ReadFrom(resp.Body)
				e.Body = b.String()
			}
		}
		return nil, e
	}
	conn.SetReadLimit(readLimit)
	return conn, nil
}

// start runs the phone on an open stream: Twilio's connected and start, then the call.
func start(ctx context.Context, o Options, tw StreamTwiML, conn *websocket.Conn) (*Call, error) {
	w := &wire{streamSid: NewSid("MZ"), accountSid: o.AccountSid, callSid: o.CallSid, params: tw.Parameters}
	if w.params == nil {
		w.params = map[string]string{}
	}
	pc, err := phone.Run(ctx, conn, w, phone.Options{
		Ref: o.CallSid, Echo: o.Echo, Lean: o.Lean, Silent: o.Silent, WriteTimeout: writeTimeout,
		Clock: o.Clock, Logger: o.Logger.With("call_sid", o.CallSid),
	})
	if err != nil {
		return nil, &StreamDialError{URL: tw.URL, Err: err}
	}
	return &Call{Call: pc, opts: o, twiml: tw, streamSid: w.streamSid}, nil
}

// CallSid is the call's CA… sid, as sent in the webhook and start.
func (c *Call) CallSid() string { return c.opts.CallSid }

// AccountSid is the AC… sid the call was placed under.
func (c *Call) AccountSid() string { return c.opts.AccountSid }

// StreamSid is the MZ… sid of the media stream; Handset must echo it in every message.
func (c *Call) StreamSid() string { return c.streamSid }

// TwiML is the stream Handset's webhook answer asked for.
func (c *Call) TwiML() StreamTwiML {
	tw := c.twiml
	tw.Parameters = make(map[string]string, len(c.twiml.Parameters))
	for k, v := range c.twiml.Parameters {
		tw.Parameters[k] = v
	}
	tw.Verbs = append([]string(nil), c.twiml.Verbs...)
	return tw
}
