package sip

import (
	"slices"

	"github.com/handset-voice/handset/internal/carrier/sip/sdp"
)

// missingG711 names a G.711 codec (PCMU or PCMA) a codec list lacks, empty when it has
// both. Every trunk speaks G.711; a list of G.722 and one G.711 law refuses the trunks
// that offer only the other law.
func missingG711(names []string) string {
	for _, law := range []string{"PCMU", "PCMA"} {
		if !slices.Contains(names, law) {
			return law
		}
	}
	return ""
}

// sameFormat is the codecs of list a re-INVITE may switch the call to: those whose audio
// format is the agreed codec's. The call engine learns its leg's format once, at the
// answer, and speaks it to the end; a switch from PCMU to PCMA or between G.711 and G.722
// would have the session send that audio under the wrong payload type. Such an offer is
// answered 488 and the call goes on as it was (RFC 3264: a refused re-offer changes
// nothing). The result is a new slice.
func sameFormat(list []sdp.Codec, agreed sdp.Codec) []sdp.Codec {
	want, ok := mediaCodec(agreed)
	var out []sdp.Codec
	for _, c := range list {
		if m, known := mediaCodec(c); ok && known && m.Format == want.Format && m.Wire == want.Wire {
			out = append(out, c)
		}
	}
	return out
}
