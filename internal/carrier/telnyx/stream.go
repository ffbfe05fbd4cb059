package telnyx

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

// handshakeTimeout bounds how long Telnyx may take to send connected and start.
const handshakeTimeout = 10 * time.Second

// maxStreamMessage bounds one message: a media payload at its bound, in base64, plus
// the envelope.
const maxStreamMessage = maxMediaPayload*4/3 + 4<<10

// stream accepts the media WebSocket Telnyx opens on the URL Handset's answer gave it,
// checks the one-time token in that URL against the call's start, and runs the call.
func (c *Carrier) stream(w http.ResponseWriter, r *http.Request) {
	if c.tokens == nil {
		http.Error(w, "Telnyx is not configured: set TELNYX_API_KEY", http.StatusServiceUnavailable)
		return
	}
	token := r.URL.Query().Get(TokenParameter)
	if token == "" {
		c.log.Warn("refused media stream", "err", mediastream.ErrTokenMissing)
		http.Error(w, mediastream.ErrTokenMissing.Error(), http.StatusForbidden)
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
		c.log.Warn("refused media stream", "err", err)
		conn.Close(websocket.StatusPolicyViolation, voice.Clip(err.Error(), 120))
		return
	}
	ref := start.Start.CallControlID
	claims, err := c.tokens.Verify(token, ref, c.opts.Now())
	if err != nil {
		c.log.Warn("refused media stream", "call_control_id", ref, "err", err)
		conn.Close(websocket.StatusPolicyViolation, err.Error())
		return
	}
	if err := c.once.StreamOnce(claims.CallRef); err != nil {
		code := websocket.StatusPolicyViolation
		if errors.Is(err, mediastream.ErrMemoryUnavailable) {
			code = websocket.StatusTryAgainLater
		}
		c.log.Warn("refused media stream", "call_control_id", ref, "err", err)
		conn.Close(code, voice.Clip(err.Error(), 120))
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
	}, c.codec, early, func(ctx context.Context) error { return c.hangup(ctx, claims.CallRef, "end") }, c.log)
	if _, err := c.opts.Admit(leg); err != nil {
		c.log.Warn("refused call", "call_control_id", ref, "err", err)
		conn.Close(websocket.StatusTryAgainLater, voice.Clip(err.Error(), 120))
		leg.hangUp(r.Context()) // refused, the call would stay up in silence
	}
	// The connection is now the call's: this handler need not wait for it to end.
}

// readStart reads up to the `start` message. `connected` comes first; anything else before
// start is kept (media, DTMF) or counted, within mediastream's bound.
func (c *Carrier) readStart(ctx context.Context, conn *websocket.Conn) (inbound, *mediastream.PreStart, error) {
	format, _ := c.codec.Format()
	early := mediastream.NewPreStart(format)
	for range mediastream.MaxEarlyFrames + 2 {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			return inbound{}, nil, fmt.Errorf("waiting for start: %w", err)
		}
		m, _, err := decodeMedia(nil, msg, c.codec == CodecL16)
		if err == nil {
			if err := early.Media(m.audio); err != nil {
				return inbound{}, nil, err
			}
			continue
		}
		if !errors.Is(err, errNotMedia) {
			if err := early.Other(err); err != nil {
				return inbound{}, nil, err
			}
			continue
		}
		in, err := decodeInbound(msg)
		if err != nil {
			if err := early.Other(err); err != nil {
				return inbound{}, nil, err
			}
			continue
		}
		switch in.Event {
		case "connected":
			continue
		case "start":
			if err := c.checkFormat(in); err != nil {
				return inbound{}, nil, err
			}
			if in.Start.CallControlID == "" {
				return inbound{}, nil, errors.New("start without a call_control_id")
			}
			return in, early, nil
		case "dtmf":
			err = early.DTMF(in.DTMF.Digit)
		case "stop":
			return inbound{}, nil, errors.New("the stream stopped before it started")
		default:
			err = early.Other(fmt.Errorf("%q before start", voice.Clip(in.Event, 40)))
		}
		if err != nil {
			return inbound{}, nil, err
		}
	}
	return inbound{}, nil, mediastream.ErrTooEarly
}

// checkFormat refuses a stream whose media is not in the codec Handset asked for.
func (c *Carrier) checkFormat(in inbound) error {
	f := in.Start.MediaFormat
	want, _ := c.codec.Format()
	if f.Encoding == "" {
		return nil // not stated: the codec asked for
	}
	if !strings.EqualFold(f.Encoding, string(c.codec)) || f.SampleRate != 0 && int(f.SampleRate) != want.Rate || f.Channels > 1 {
		return fmt.Errorf("unsupported media format %s/%d (asked for %s/%d)", voice.Clip(f.Encoding, 40), f.SampleRate, c.codec, want.Rate)
	}
	return nil
}
