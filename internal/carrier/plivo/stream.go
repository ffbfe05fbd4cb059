package plivo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/carrier/mediastream"
	"github.com/handset-voice/handset/internal/voice"
)

// handshakeTimeout bounds how long Plivo may take to send start.
const handshakeTimeout = 10 * time.Second

// maxMediaPayload bounds one media message's decoded audio: a second of 16 kHz L16 with
// room to spare.
const maxMediaPayload = 48 << 10

// maxStreamMessage bounds one message: a media payload at its bound, in base64, plus the
// envelope.
const maxStreamMessage = maxMediaPayload*4/3 + 4<<10

// stream accepts the media WebSocket Plivo opens on the <Stream>'s URL. Plivo's token
// comes in start's extra_headers, not in the URL, so the socket is accepted first and
// closed with the reason when start carries no valid token for its callId.
func (c *Carrier) stream(w http.ResponseWriter, r *http.Request) {
	if c.tokens == nil {
		http.Error(w, "Plivo is not configured: set PLIVO_AUTH_TOKEN", http.StatusServiceUnavailable)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept already answered the client
	}
	conn.SetReadLimit(maxStreamMessage)
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	start, early, err := c.readStart(ctx, conn)
	cancel()
	if err != nil {
		c.refuse(conn, "", websocket.StatusPolicyViolation, err)
		return
	}
	ref := start.Start.CallID
	token := ParseExtraHeaders(start.ExtraHeaders)[TokenHeader]
	if token == "" {
		c.refuse(conn, ref, websocket.StatusPolicyViolation, mediastream.ErrTokenMissing)
		return
	}
	claims, err := c.tokens.Verify(token, ref, c.opts.Now())
	if err != nil {
		c.refuse(conn, ref, websocket.StatusPolicyViolation, err)
		return
	}
	if err := c.once.StreamOnce(claims.CallRef); err != nil {
		code := websocket.StatusPolicyViolation
		if errors.Is(err, mediastream.ErrMemoryUnavailable) {
			code = websocket.StatusTryAgainLater
		}
		c.refuse(conn, ref, code, err)
		return
	}
	ct, _ := c.codec.ContentType()
	streamID := start.Start.StreamID
	if streamID == "" {
		streamID = start.StreamID
	}
	writer, err := NewWriter(streamID, ct)
	if err != nil {
		c.refuse(conn, ref, websocket.StatusInternalError, err)
		return
	}
	format, _ := c.codec.Format()
	id := voice.CallID(claims.CallID) // an outbound call keeps the id Handset gave it
	if id == "" {
		id = voice.NewCallID()
	}
	leg := newLeg(conn, voice.LegInfo{
		CallID: id, Carrier: Name, CarrierRef: claims.CallRef,
		Direction: voice.Direction(claims.Direction), From: claims.From, To: claims.To,
		Format: format, AnsweredBy: claims.AnsweredBy, Attestation: voice.Attestation(claims.Attestation),
	}, writer, early, c.log)
	if _, err := c.opts.Admit(leg); err != nil {
		c.refuse(conn, ref, websocket.StatusTryAgainLater, fmt.Errorf("refused call: %w", err))
	}
	// The connection is now the call's: this handler need not wait for it to end.
}

// refuse closes a stream Handset will not take, with why as the close reason.
func (c *Carrier) refuse(conn *websocket.Conn, ref string, code websocket.StatusCode, why error) {
	c.log.Warn("refused media stream", "call_uuid", voice.Clip(ref, 64), "err", why)
	conn.Close(code, voice.Clip(why.Error(), 120))
}

// readStart reads up to `start`, Plivo's first message. Media or DTMF before it is kept
// (within mediastream's bound); anything else is counted.
func (c *Carrier) readStart(ctx context.Context, conn *websocket.Conn) (Frame, *mediastream.PreStart, error) {
	format, _ := c.codec.Format()
	early := mediastream.NewPreStart(format)
	buf := make([]byte, 0, initialMediaBuffer)
	for range mediastream.MaxEarlyFrames + 1 {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			return Frame{}, nil, fmt.Errorf("waiting for start: %w", err)
		}
		buf = mediaBuffer(buf, msg)
		m, err := DecodeMedia(buf, msg)
		if err == nil {
			if err := early.Media(m.Payload); err != nil {
				return Frame{}, nil, err
			}
			continue
		}
		if !errors.Is(err, ErrNotMedia) {
			if err := early.Other(err); err != nil {
				return Frame{}, nil, err
			}
			continue
		}
		f, err := DecodeFrame(msg)
		switch {
		case err != nil:
			err = early.Other(err)
		case f.Event == EventStart:
			if err := c.checkFormat(f); err != nil {
				return Frame{}, nil, err
			}
			if f.Start.CallID == "" {
				return Frame{}, nil, errors.New("start without a callId")
			}
			return f, early, nil
		case f.Event == EventDTMF:
			err = early.DTMF(f.DTMF.Digit)
		case f.Event == EventStop:
			return Frame{}, nil, errors.New("the stream stopped before it started")
		default:
			err = early.Other(fmt.Errorf("%q before start", voice.Clip(f.Event, 40)))
		}
		if err != nil {
			return Frame{}, nil, err
		}
	}
	return Frame{}, nil, mediastream.ErrTooEarly
}

// checkFormat refuses a stream whose media is not what the <Stream> asked for (Plivo's
// default, L16 at 8 kHz, arriving would mean the contentType was lost).
func (c *Carrier) checkFormat(f Frame) error {
	mf := f.Start.MediaFormat
	if mf.Encoding == "" {
		return nil // not stated: what the <Stream> asked for
	}
	ct, _ := c.codec.ContentType()
	enc, _, _ := strings.Cut(ct, ";")
	want, _ := c.codec.Format()
	if !strings.EqualFold(mf.Encoding, enc) || mf.SampleRate != 0 && mf.SampleRate != want.Rate {
		return fmt.Errorf("unsupported media format %s/%d (asked for %s/%d)", voice.Clip(mf.Encoding, 40), mf.SampleRate, enc, want.Rate)
	}
	return nil
}
