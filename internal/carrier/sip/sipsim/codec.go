package sipsim

import "strings"

// The static payload types (RFC 3551) of the codecs the simulated trunk can offer.
var staticCodecs = []struct {
	pt   uint8
	name string
}{{0, "PCMU"}, {8, "PCMA"}, {9, "G722"}}

// offeredCodec is the payload type and rtpmap name of a CallOptions.Codec; anything
// unknown, or empty, is PCMU.
func offeredCodec(name string) (uint8, string) {
	for _, c := range staticCodecs {
		if strings.EqualFold(name, c.name) {
			return c.pt, c.name
		}
	}
	return 0, "PCMU"
}

// codecName is the rtpmap name of one of those payload types.
func codecName(pt uint8) string {
	for _, c := range staticCodecs {
		if c.pt == pt {
			return c.name
		}
	}
	return "PCMU"
}
