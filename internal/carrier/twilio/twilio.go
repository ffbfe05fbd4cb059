// Package twilio is Handset's Twilio carrier: the voice webhook (signature check, TwiML
// <Connect><Stream> with a one-time stream token), and the bidirectional Media Streams
// WebSocket as a voice.Leg (8 kHz mu-law in and out, marks, clear, DTMF).
//
// Wire protocol: https://www.twilio.com/docs/voice/twiml/stream,
// https://www.twilio.com/docs/voice/media-streams/websocket-messages and
// https://www.twilio.com/docs/usage/webhooks/webhooks-security.
package twilio

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/mediastream"
	"github.com/handset-voice/handset/internal/voice"
)

// Options configure the carrier.
type Options struct {
	// AuthToken signs Twilio's requests to us; without it every request is refused.
	AuthToken string
	// PublicURL is the base URL Twilio reaches us at. Signatures are checked against it
	// and the stream URL in TwiML is built from it. Empty: derived from each request.
	PublicURL string
	// TrustedProxies are the peers whose X-Forwarded-Host and X-Forwarded-Proto are
	// believed when PublicURL is empty; for anyone else the request's own Host and scheme
	// make the URL its signature is checked against.
	TrustedProxies []netip.Prefix
	// Memory remembers each call's webhook answer and whether its stream opened, for every
	// node; required.
	Memory carrier.Memory
	// Draining, when set, is asked on each voice webhook: while it says true the webhook
	// answers 503, so Twilio tries the number's fallback URL instead.
	Draining func() bool
	// Admit starts a call on leg and returns a channel closed when the call is over. An
	// error refuses the call (draining, at capacity).
	Admit func(leg voice.Leg) (<-chan struct{}, error)
	// OnProgress, when set, is told every status callback (and every outbound call Handset
	// declined because a machine answered). It runs in the HTTP handler: keep it short.
	OnProgress func(carrier.Progress)
	Logger     *slog.Logger
	Now        func() time.Time
}

// Carrier serves the Twilio endpoints.
type Carrier struct {
	opts   Options
	tokens *mediastream.Tokens
	once   mediastream.Once
	log    *slog.Logger
}

// New returns the carrier. opts.Memory is required.
func New(opts Options) *Carrier {
	if opts.Memory == nil {
		panic("twilio: Options.Memory is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger.With("carrier", "twilio")
	return &Carrier{
		opts: opts, tokens: mediastream.NewTokens(opts.AuthToken, "twilio", mediastream.EncodingJSON), log: log,
		once: mediastream.Once{Memory: opts.Memory, Now: opts.Now, Log: log, RefKey: "call_sid", ContentType: "text/xml"},
	}
}

// Handset's Twilio routes: where a number's calls and their progress are sent.
const (
	VoicePath  = "/twilio/voice"
	StatusPath = "/twilio/status"
)

// Register mounts POST /twilio/voice, GET /twilio/stream and POST /twilio/status.
func (c *Carrier) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST "+VoicePath, c.voice)
	mux.HandleFunc("GET /twilio/stream", c.stream)
	mux.HandleFunc("POST "+StatusPath, c.status)
}

// TokenParameter is the <Parameter> name that carries the stream token.
const TokenParameter = "handset_token"

// publicURL is the URL Twilio used for r: PublicURL plus the path, or the request's own.
func (c *Carrier) publicURL(r *http.Request, wsScheme bool) string {
	return mediastream.PublicURL(r, c.opts.PublicURL, c.opts.TrustedProxies, wsScheme)
}

func (c *Carrier) checkSignature(w http.ResponseWriter, r *http.Request, params url.Values, ws bool) bool {
	if c.opts.AuthToken == "" {
		http.Error(w, "Twilio is not configured: set TWILIO_AUTH_TOKEN", http.StatusServiceUnavailable)
		return false
	}
	u := c.publicURL(r, ws)
	if !ValidSignature(c.opts.AuthToken, u, params, r.Header.Get("X-Twilio-Signature")) {
		c.log.Warn("refused request with a bad Twilio signature", "url", u,
			"hint", "check TWILIO_AUTH_TOKEN, and set HANDSET_PUBLIC_URL to the URL Twilio calls when behind a proxy or tunnel")
		http.Error(w, "invalid Twilio signature", http.StatusForbidden)
		return false
	}
	return true
}

// voice answers the call webhook with TwiML that connects a bidirectional stream.
func (c *Carrier) voice(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "malformed form body", http.StatusBadRequest)
		return
	}
	if !c.checkSignature(w, r, r.PostForm, false) {
		return
	}
	if c.opts.Draining != nil && c.opts.Draining() {
		// The stream would be refused: Twilio tries the number's fallback URL on a 5xx.
		c.log.Info("voice webhook refused while draining", "call_sid", r.PostForm.Get("CallSid"))
		http.Error(w, "draining: not taking new calls", http.StatusServiceUnavailable)
		return
	}
	sid := r.PostForm.Get("CallSid")
	if sid == "" {
		http.Error(w, "missing CallSid", http.StatusBadRequest)
		return
	}
	dir := voice.Inbound
	if strings.HasPrefix(r.PostForm.Get("Direction"), "outbound") {
		dir = voice.Outbound
	}
	q := r.URL.Query()
	callID, answeredBy := q.Get(callParam), r.PostForm.Get("AnsweredBy")
	if machineAnswered(answeredBy) && MachinePolicy(q.Get(machineParam)) == MachineHangup {
		if !c.answerOnce(w, r, sid, hangupTwiML()) {
			return
		}
		c.log.Info("a machine answered: hanging up", "call_sid", sid, "answered_by", answeredBy)
		if c.opts.OnProgress != nil {
			c.opts.OnProgress(carrier.Progress{CallID: voice.CallID(callID), Ref: sid, AnsweredBy: carrier.AnsweredBy(answeredBy), Declined: true})
		}
		return
	}
	var attest voice.Attestation
	if dir == voice.Inbound {
		attest = Attestation(r.PostForm.Get("StirVerstat"))
	}
	token, err := c.tokens.Mint(mediastream.Claims{
		CallRef: sid, From: r.PostForm.Get("From"), To: r.PostForm.Get("To"), Direction: string(dir),
		CallID: callID, AnsweredBy: answeredBy, Attestation: string(attest),
	}, c.opts.Now())
	if err != nil { // the JSON spelling has no bound: not reached
		http.Error(w, "stream token: "+err.Error(), http.StatusInternalServerError)
		return
	}
	streamURL := c.publicURL(r, true)
	streamURL = streamURL[:len(streamURL)-len(r.URL.RequestURI())] + "/twilio/stream"
	if c.answerOnce(w, r, sid, connectTwiML(streamURL, token)) {
		c.log.Info("answered call", "call_sid", sid, "direction", dir, "attestation", attest)
	}
}

// Attestation reads Twilio's StirVerstat: the STIR/SHAKEN verification of an inbound
// caller's number (TN-Validation-Passed-A/B/C, TN-Validation-Failed[-A/B/C],
// No-TN-Validation). Twilio sends it only for calls that carried a signature, which today
// means calls from the US and Canadian phone network; absent, the result is empty. A value
// it does not recognise vouches for nothing.
func Attestation(stirVerstat string) voice.Attestation {
	v := strings.ToLower(strings.TrimSpace(stirVerstat))
	switch {
	case v == "":
		return ""
	case v == "tn-validation-passed-a":
		return voice.AttestationA
	case v == "tn-validation-passed-b":
		return voice.AttestationB
	case v == "tn-validation-passed-c":
		return voice.AttestationC
	case strings.HasPrefix(v, "tn-validation-failed"):
		return voice.AttestationFailed
	}
	return voice.AttestationNone
}

// connectTwiML renders <Connect><Stream> with the token as a <Parameter>.
func connectTwiML(streamURL, token string) []byte {
	type param struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	type stream struct {
		URL    string  `xml:"url,attr"`
		Params []param `xml:"Parameter"`
	}
	doc := struct {
		XMLName xml.Name `xml:"Response"`
		Stream  stream   `xml:"Connect>Stream"`
	}{Stream: stream{URL: streamURL, Params: []param{{Name: TokenParameter, Value: token}}}}
	out, _ := xml.Marshal(doc)
	return append([]byte(xml.Header), out...)
}

func (c *Carrier) status(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "malformed form body", http.StatusBadRequest)
		return
	}
	if !c.checkSignature(w, r, r.PostForm, false) {
		return
	}
	p := progressFrom(r)
	seq, _ := strconv.Atoi(r.PostForm.Get("SequenceNumber")) // callbacks may arrive out of order
	c.log.Info("call status", "call_sid", p.Ref, "status", string(p.Status), "sequence", seq)
	if c.opts.OnProgress != nil {
		c.opts.OnProgress(p)
	}
	w.WriteHeader(http.StatusNoContent)
}

// handshakeTimeout bounds how long Twilio may take to send connected and start.
const handshakeTimeout = 10 * time.Second

// stream accepts the Media Streams WebSocket, checks its token and runs the call.
func (c *Carrier) stream(w http.ResponseWriter, r *http.Request) {
	if !c.checkSignature(w, r, nil, true) {
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept already answered the client
	}
	conn.SetReadLimit(1 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	start, err := readStart(ctx, conn)
	cancel()
	if err != nil {
		c.log.Warn("refused media stream", "err", err)
		conn.Close(websocket.StatusPolicyViolation, voice.Clip(err.Error(), 120))
		return
	}
	claims, err := c.tokens.Verify(start.Start.CustomParameters[TokenParameter], start.Start.CallSid, c.opts.Now())
	if err != nil {
		c.log.Warn("refused media stream", "call_sid", start.Start.CallSid, "err", err)
		conn.Close(websocket.StatusPolicyViolation, err.Error())
		return
	}
	if err := c.once.StreamOnce(claims.CallRef); err != nil {
		c.log.Warn("refused media stream", "call_sid", claims.CallRef, "err", err)
		code := websocket.StatusPolicyViolation
		if errors.Is(err, mediastream.ErrMemoryUnavailable) {
			code = websocket.StatusTryAgainLater
		}
		conn.Close(code, voice.Clip(err.Error(), 120))
		return
	}
	leg := newLeg(conn, start, claims)
	if _, err := c.opts.Admit(leg); err != nil {
		c.log.Warn("refused call", "call_sid", claims.CallRef, "err", err)
		conn.Close(websocket.StatusTryAgainLater, voice.Clip(err.Error(), 120))
	}
	// The connection is hijacked and now the call's: this handler's goroutine need not
	// wait for the call to end (one goroutine fewer per call).
}

// readStart reads up to the `start` message ("connected" comes first).
func readStart(ctx context.Context, conn *websocket.Conn) (inbound, error) {
	for range 4 {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			return inbound{}, fmt.Errorf("waiting for start: %w", err)
		}
		in, err := decodeInbound(msg)
		if err != nil {
			return inbound{}, err
		}
		switch in.Event {
		case "connected":
			continue
		case "start":
			if f := in.Start.MediaFormat; f.Encoding != "" && (f.Encoding != "audio/x-mulaw" || f.SampleRate != 8000) {
				return inbound{}, fmt.Errorf("unsupported media format %s/%d", voice.Clip(f.Encoding, 40), f.SampleRate)
			}
			if in.StreamSid == "" {
				in.StreamSid = in.Start.StreamSid
			}
			return in, nil
		}
	}
	return inbound{}, errors.New("no start message")
}

// Leg is one Twilio media stream.
type Leg struct {
	conn      *websocket.Conn
	info      voice.LegInfo
	streamSid string
	out       []byte // the writer's reused message buffer (one writer at a time)
}

var _ voice.Leg = (*Leg)(nil)

func newLeg(conn *websocket.Conn, start inbound, claims mediastream.Claims) *Leg {
	id := voice.CallID(claims.CallID) // an outbound call keeps the id Handset gave it
	if id == "" {
		id = voice.NewCallID()
	}
	return &Leg{
		conn: conn, streamSid: start.StreamSid,
		info: voice.LegInfo{
			CallID: id, Carrier: "twilio", CarrierRef: claims.CallRef,
			Direction: voice.Direction(claims.Direction), From: claims.From, To: claims.To,
			Format: audio.Telephone, AnsweredBy: claims.AnsweredBy, Attestation: voice.Attestation(claims.Attestation),
		},
		out: make([]byte, 0, 512),
	}
}

// Info describes the call.
func (l *Leg) Info() voice.LegInfo { return l.info }

// Run reads Twilio's messages until `stop`, a close, or ctx ends.
func (l *Leg) Run(ctx context.Context, sink voice.LegSink) error {
	defer l.conn.Close(websocket.StatusNormalClosure, "call ended")
	// Reads and writes pass a context that is never cancelled, so the WebSocket library
	// arms no cancellation watch per 20 ms frame; the call's end closes the socket
	// instead, which ends any read or write in progress.
	stop := context.AfterFunc(ctx, func() { _ = l.conn.CloseNow() })
	defer stop()
	buf := make([]byte, 0, 4096)
	var in bytes.Buffer // one message at a time, reused
	for {
		msg, err := l.read(&in)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if websocket.CloseStatus(err) != -1 {
				return nil // Twilio closed the stream: the call is over
			}
			return fmt.Errorf("twilio: read: %w", err)
		}
		frame, err := decodeMedia(buf, msg)
		if err == nil {
			sink.Audio(frame)
			continue
		}
		if !errors.Is(err, errNotMedia) {
			sink.Malformed(err)
			continue
		}
		in, err := decodeInbound(msg)
		if err != nil {
			sink.Malformed(err)
			continue
		}
		switch in.Event {
		case "mark":
			sink.Mark(in.Mark.Name)
		case "dtmf":
			sink.DTMF(in.DTMF.Digit)
		case "stop":
			return nil
		case "connected", "start":
		default:
			sink.Malformed(fmt.Errorf("unknown event %q", voice.Clip(in.Event, 40)))
		}
	}
}

// SendAudio sends mu-law audio as one media message.
func (l *Leg) SendAudio(ctx context.Context, audio []byte) error {
	l.out = appendMedia(l.out[:0], l.streamSid, audio)
	return l.write(ctx)
}

// SendMark asks Twilio to echo name once everything sent before it has played.
func (l *Leg) SendMark(ctx context.Context, name string) error {
	l.out = appendMark(l.out[:0], l.streamSid, name)
	return l.write(ctx)
}

// Clear drops the audio Twilio has buffered; pending marks come back at once.
func (l *Leg) Clear(ctx context.Context) error {
	l.out = appendClear(l.out[:0], l.streamSid)
	return l.write(ctx)
}

// read reads one message into in; the bytes are valid until the next read.
func (l *Leg) read(in *bytes.Buffer) ([]byte, error) {
	_, r, err := l.conn.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	if in.Cap() > maxKeptMessage {
		*in = bytes.Buffer{} // one large message must not pin its buffer for the whole call
	}
	in.Reset()
	_, err = in.ReadFrom(r)
	return in.Bytes(), err
}

// maxKeptMessage is the largest read buffer a leg keeps between messages.
const maxKeptMessage = 64 << 10

// write sends l.out. Its context is not the call's (see Run): a call that ends closes the
// socket, which fails the write.
func (l *Leg) write(context.Context) error {
	if err := l.conn.Write(context.Background(), websocket.MessageText, l.out); err != nil {
		return fmt.Errorf("twilio: write: %w", err)
	}
	return nil
}
