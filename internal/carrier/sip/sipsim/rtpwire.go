package sipsim

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/phone"
)

// Codes of the protocol errors the simulated trunk records for RTP from Handset that a
// trunk would drop. RTP has no error codes of its own; these name what was wrong.
const (
	CodeNotRTP         = 1 // not an RTP version 2 packet, or cut short
	CodeUnknownPayload = 2 // a payload type the answer did not agree on
)

// rtpHeaderLen is a fixed RTP header without CSRCs or an extension.
const rtpHeaderLen = 12

// comfortNoisePT is RFC 3389 comfort noise, which a sender may use for its silences.
const comfortNoisePT = 13

// rtpWire is the simulated trunk's RTP as a phone.Wire: each paced frame is one RTP packet
// of G.711 audio on the call's own sequence, timestamp and SSRC; a key press is an RFC 4733
// event. What Handset sends is audio in the agreed codec, or telephone events and comfort
// noise, which the trunk does not play. RTP has no marks, clears or stop: the wire is
// audio-only and the call ends by signalling.
type rtpWire struct {
	audioPT, dtmfPT uint8
	format          audio.Format
	seq             uint16 // the writer's, as phone.Wire allows
	ts, ssrc        uint32
}

func newRTPWire(call *Call) *rtpWire {
	f := audio.Format{Encoding: audio.Mulaw, Rate: 8000}
	if call.pt == 8 {
		f.Encoding = audio.Alaw
	}
	return &rtpWire{audioPT: call.pt, dtmfPT: call.dtmfPT, format: f,
		seq: uint16(randomUint32()), ts: randomUint32(), ssrc: randomUint32()}
}

func (w *rtpWire) Info() phone.Info {
	return phone.Info{Name: "sip", Format: w.format, Frame: 20 * time.Millisecond, AudioOnly: true,
		MalformedCode: CodeNotRTP}
}

func (w *rtpWire) Handshake() [][]byte { return nil }

func (w *rtpWire) AppendMedia(dst, payload []byte, f phone.Frame) []byte {
	dst = w.appendHeader(dst, w.audioPT, f.Chunk == 1, w.ts)
	w.ts += uint32(len(payload)) // G.711: one byte per sample
	return append(dst, payload...)
}

func (w *rtpWire) appendHeader(dst []byte, pt uint8, marker bool, ts uint32) []byte {
	b1 := pt & 0x7f
	if marker {
		b1 |= 0x80
	}
	dst = append(dst, 2<<6, b1)
	dst = binary.BigEndian.AppendUint16(dst, w.seq)
	dst = binary.BigEndian.AppendUint32(dst, ts)
	dst = binary.BigEndian.AppendUint32(dst, w.ssrc)
	w.seq++
	return dst
}

func (w *rtpWire) Mark(string, bool) []byte { return nil }
func (w *rtpWire) Cleared() []byte          { return nil }
func (w *rtpWire) Stop() []byte             { return nil }

// DTMF is one RFC 4733 event as a single end packet of 100 ms: the wire sends one message
// per key press, and a receiver reports an event from its first packet, whichever it is.
// Handset's answer without telephone-event still gets the packet, on the type the
// simulated trunk offered, and drops it as a trunk would expect.
func (w *rtpWire) DTMF(digit string) []byte {
	pt := w.dtmfPT
	if pt == 0 {
		pt = dtmfPT
	}
	event := dtmfEvents[digit]
	const volume, duration = 10, 800 // -10 dBm0, 100 ms at 8 kHz
	b := w.appendHeader(make([]byte, 0, rtpHeaderLen+4), pt, true, w.ts)
	b = append(b, event, 0x80|volume)
	return binary.BigEndian.AppendUint16(b, duration)
}

// Decode reads one RTP packet from Handset: audio in the agreed codec is media; telephone
// events and comfort noise are not played; anything else is an error a trunk would drop.
func (w *rtpWire) Decode(_ websocket.MessageType, msg, _ []byte) (phone.Inbound, error) {
	payload, pt, err := rtpPayload(msg)
	if err != nil {
		return phone.Inbound{}, &phone.WireError{Code: CodeNotRTP, Detail: err.Error()}
	}
	switch pt {
	case w.audioPT:
		return phone.Inbound{Kind: phone.InMedia, Audio: payload}, nil
	case w.dtmfPT, comfortNoisePT:
		return phone.Inbound{Kind: phone.InIgnore}, nil
	}
	return phone.Inbound{}, &phone.WireError{Code: CodeUnknownPayload, Detail: fmt.Sprintf("payload type %d was not agreed", pt)}
}

// rtpPayload checks an RTP packet's header and returns its payload and payload type.
func rtpPayload(p []byte) ([]byte, uint8, error) {
	if len(p) < rtpHeaderLen {
		return nil, 0, fmt.Errorf("%d bytes, shorter than an RTP header", len(p))
	}
	if p[0]>>6 != 2 {
		return nil, 0, fmt.Errorf("RTP version %d", p[0]>>6)
	}
	n := rtpHeaderLen + 4*int(p[0]&0x0f)
	if p[0]&0x10 != 0 { // a header extension: 4 bytes of profile and length, then the words
		if len(p) < n+4 {
			return nil, 0, fmt.Errorf("%d bytes, cut inside the header extension", len(p))
		}
		n += 4 + 4*int(binary.BigEndian.Uint16(p[n+2:]))
	}
	end := len(p)
	if p[0]&0x20 != 0 && end > 0 { // padding: its count is the last byte
		end -= int(p[end-1])
	}
	if n > end {
		return nil, 0, fmt.Errorf("%d bytes, cut inside the header or padded past it", len(p))
	}
	return p[n:end], p[1] & 0x7f, nil
}
