// Package dtmfinfo reads keypresses sent in SIP INFO requests. Most SIP peers send DTMF in
// the RTP stream (RFC 4733), but some PBXes and trunks send each key as an INFO request
// whose body names it: application/dtmf-relay ("Signal=5\r\nDuration=160") or
// application/dtmf ("5"). The body comes from the network: Parse bounds it and refuses
// anything that is not exactly one key.
package dtmfinfo

import "errors"

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
	panic("not implemented")
}
