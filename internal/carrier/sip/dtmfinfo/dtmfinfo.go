// Package dtmfinfo reads keypresses sent in SIP INFO requests. Most SIP peers send DTMF in
// the RTP stream (RFC 4733), but some PBXes and trunks send each key as an INFO request
// whose body names it: application/dtmf-relay ("Signal=5\r\nDuration=160") or
// application/dtmf ("5"). The body comes from the network: Parse bounds it and refuses
// anything that is not exactly one key.
package dtmfinfo

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// MaxBodySize bounds an INFO body: a dtmf-relay body is two short lines.
const MaxBodySize = 256

// Errors Parse classifies its failures with (errors.Is).
var (
	ErrTooLarge    = errors.New("dtmfinfo: body too large")
	ErrContentType = errors.New("dtmfinfo: not a DTMF content type")
	ErrNoSignal    = errors.New("dtmfinfo: no Signal line")
	ErrBadDigit    = errors.New("dtmfinfo: not a DTMF key")
)

// Parse returns the key an INFO body names: "0"-"9", "*", "#" or "A"-"D" (letters
// upper-cased; "10" and "11", which some PBXes send for * and #, become "*" and "#").
// contentType is the request's Content-Type header; parameters after ";" are ignored.
func Parse(contentType string, body []byte) (digit string, err error) {
	if len(body) > MaxBodySize {
		return "", fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(body), MaxBodySize)
	}
	mediaType, _, _ := strings.Cut(contentType, ";")
	switch strings.ToLower(strings.TrimSpace(mediaType)) {
	case "application/dtmf-relay":
		return relaySignal(body)
	case "application/dtmf":
		return key(bytes.TrimSpace(body))
	default:
		return "", fmt.Errorf("%w: %q", ErrContentType, clip(contentType))
	}
}

// relaySignal finds the Signal line of a dtmf-relay body; other lines (Duration) are
// ignored. Two Signal lines are refused: which key was meant is unknown.
func relaySignal(body []byte) (string, error) {
	var signal []byte
	found := false
	for line := range bytes.Lines(body) {
		name, value, ok := bytes.Cut(line, []byte("="))
		if !ok || !strings.EqualFold(string(bytes.TrimSpace(name)), "signal") {
			continue
		}
		if found {
			return "", fmt.Errorf("%w: more than one Signal line", ErrBadDigit)
		}
		signal, found = bytes.TrimSpace(value), true
	}
	if !found {
		return "", ErrNoSignal
	}
	return key(signal)
}

// keys maps every accepted spelling of a key to the key.
var keys = map[string]string{
	"0": "0", "1": "1", "2": "2", "3": "3", "4": "4",
	"5": "5", "6": "6", "7": "7", "8": "8", "9": "9",
	"*": "*", "#": "#", "10": "*", "11": "#",
	"A": "A", "B": "B", "C": "C", "D": "D",
	"a": "A", "b": "B", "c": "C", "d": "D",
}

func key(b []byte) (string, error) {
	if k, ok := keys[string(b)]; ok {
		return k, nil
	}
	return "", fmt.Errorf("%w: %q", ErrBadDigit, clip(string(b)))
}

// clip shortens what an error quotes from the network.
func clip(s string) string {
	const limit = 32
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}
