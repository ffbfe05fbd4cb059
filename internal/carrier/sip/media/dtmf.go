package media

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// An RFC 4733 telephone-event payload is four bytes: the event code, a flags byte (E: the
// event ended, R: reserved, then six bits of volume) and the event's duration so far in
// timestamp units. Every packet of one event carries the event's start timestamp.
const eventBytes = 4

var errShortEvent = errors.New("media: telephone-event payload shorter than 4 bytes")

// event is one decoded telephone-event payload.
type event struct {
	code     uint8
	end      bool
	volume   uint8
	duration uint16
}

// decodeEvent reads the first event of a telephone-event payload. Trailing bytes (a
// second event some senders pack in) are ignored: the first one names the key.
func decodeEvent(payload []byte) (event, error) {
	if len(payload) < eventBytes {
		return event{}, errShortEvent
	}
	return event{
		code:     payload[0],
		end:      payload[1]&0x80 != 0,
		volume:   payload[1] & 0x3F,
		duration: binary.BigEndian.Uint16(payload[2:4]),
	}, nil
}

// encodeEvent writes e into dst[:4].
func encodeEvent(dst []byte, e event) {
	dst[0] = e.code
	dst[1] = e.volume & 0x3F
	if e.end {
		dst[1] |= 0x80
	}
	binary.BigEndian.PutUint16(dst[2:4], e.duration)
}

// eventDigits are the keys of event codes 0-15 (RFC 4733 section 3.2); other codes are
// tones and flashes the call has no use for.
const eventDigits = "0123456789*#ABCD"

// digitName is the key of an event code, "" for codes that are not keys. The strings are
// static, so reporting a digit allocates nothing.
func digitName(code uint8) string {
	if int(code) >= len(eventDigits) {
		return ""
	}
	return eventDigits[code : code+1]
}

// digitCode is the event code of a key.
func digitCode(digit string) (uint8, error) {
	if len(digit) == 1 {
		for i := range len(eventDigits) {
			if eventDigits[i] == digit[0] {
				return uint8(i), nil
			}
		}
	}
	return 0, fmt.Errorf("media: %q is not a DTMF key (0-9, *, #, A-D)", digit)
}

// rememberedEvents is how many reported events a dtmfReceiver knows again: enough for the
// retransmits of the last few keys that arrive late.
const rememberedEvents = 4

// dtmfReceiver reports each telephone event once: on its first packet, whichever that is
// (an update or, if the updates were lost, an end packet). The updates, the redundant end
// packets and retransmits that follow carry the same SSRC and timestamp and are ignored.
type dtmfReceiver struct {
	seen [rememberedEvents]eventKey
	n    int // events remembered, up to rememberedEvents
	next int // where the next one is written
}

type eventKey struct{ ssrc, ts uint32 }

// receive decodes a payload and returns the key to report, "" when there is none new.
func (r *dtmfReceiver) receive(ssrc, ts uint32, payload []byte) (string, error) {
	e, err := decodeEvent(payload)
	if err != nil {
		return "", err
	}
	key := eventKey{ssrc, ts}
	for i := range r.n {
		if r.seen[i] == key {
			return "", nil
		}
	}
	r.seen[r.next] = key
	r.next = (r.next + 1) % rememberedEvents
	r.n = min(r.n+1, rememberedEvents)
	return digitName(e.code), nil
}
