package sdp

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	psdp "github.com/pion/sdp/v3"
)

// Bounds on what one body may list; real calls stay far below them.
const (
	maxStreams = 16 // m= lines
	maxCrypto  = 16 // a=crypto lines on the audio stream
)

// stream is one m= line as the answer must repeat it: RFC 3264 answers every offered
// line, in order, declining (port 0) those it does not take.
type stream struct {
	media, proto, format string
}

// Parse reads a peer's SDP body (an offer, or an answer before the offer it answers is
// known) and returns its audio stream: the first RTP/AVP or RTP/SAVP audio m= line with a
// non-zero port, or the first audio line when all are declined. Other media lines are
// ignored (an Answer declines them). Attributes Handset has no use for are read past; an
// unreadable a=ptime counts as absent.
func Parse(body []byte) (Media, error) {
	if len(body) > MaxBodySize {
		return Media{}, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(body))
	}
	audioOnly, streams, audio, err := split(body)
	if err != nil {
		return Media{}, err
	}
	if len(audio) == 0 {
		return Media{}, ErrNoAudio
	}
	var desc psdp.SessionDescription
	if err := desc.Unmarshal(audioOnly); err != nil {
		return Media{}, fmt.Errorf("%w: %s", ErrSyntax, clip(err.Error()))
	}
	if len(desc.MediaDescriptions) != len(audio) {
		return Media{}, fmt.Errorf("%w: media lines", ErrSyntax)
	}
	pick, live := -1, false
	for i, md := range desc.MediaDescriptions {
		if md.MediaName.Port.Value == 0 {
			continue
		}
		live = true
		if _, ok := secureProto(md.MediaName.Protos); ok {
			pick = i
			break
		}
	}
	switch {
	case pick < 0 && live:
		return Media{}, fmt.Errorf("%w: no RTP/AVP or RTP/SAVP audio stream", ErrNoAudio)
	case pick < 0:
		pick = 0 // every audio stream declined: report the first
	}
	m, err := media(&desc, desc.MediaDescriptions[pick])
	if err != nil {
		return Media{}, err
	}
	m.streams, m.audio = streams, audio[pick]
	return m, nil
}

// split reads the m= lines itself and returns the body with only its session part and
// audio sections (the part pion reads: it refuses media types and transports it does not
// know, T.38's "m=image … udptl" among them), every stream, and the index in streams of
// each audio section. Bandwidth lines are dropped: Handset has no use for them and pion
// refuses types it does not know. A session part without its t= line, which some user
// agents leave out, gets "t=0 0" (a call is always unbounded in time).
func split(body []byte) ([]byte, []stream, []int, error) {
	out := make([]byte, 0, len(body)+16)
	var streams []stream
	var audio []int
	keep, timed := true, false
	for line := range bytes.Lines(body) {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 || bytes.HasPrefix(line, []byte("b=")) {
			continue
		}
		if !timed {
			switch {
			case bytes.HasPrefix(line, []byte("t=")):
				timed = true
			case afterTiming(line):
				out, timed = append(out, "t=0 0\r\n"...), true
			}
		}
		if bytes.HasPrefix(line, []byte("m=")) {
			if len(streams) == maxStreams {
				return nil, nil, nil, fmt.Errorf("%w: more than %d media lines", ErrSyntax, maxStreams)
			}
			fields := strings.Fields(string(line[2:]))
			if len(fields) < 4 {
				return nil, nil, nil, fmt.Errorf("%w: media line %q", ErrSyntax, clip(string(line)))
			}
			streams = append(streams, stream{media: fields[0], proto: fields[2], format: fields[3]})
			keep = fields[0] == "audio"
			if keep {
				audio = append(audio, len(streams)-1)
			}
		}
		if keep {
			out = append(append(out, line...), '\r', '\n')
		}
	}
	return out, streams, audio, nil
}

// afterTiming reports whether a line's type comes after t= in a body (RFC 4566: r=, z=,
// k=, a=, then the media).
func afterTiming(line []byte) bool {
	return len(line) >= 2 && line[1] == '=' && bytes.IndexByte([]byte("rzkam"), line[0]) >= 0
}

// secureProto reports whether an RTP transport is SRTP, and false ok for transports that
// are not plain RTP/AVP or RTP/SAVP (DTLS, AVPF feedback profiles).
func secureProto(protos []string) (secure, ok bool) {
	if len(protos) != 2 || protos[0] != "RTP" {
		return false, false
	}
	switch protos[1] {
	case "AVP":
		return false, true
	case "SAVP":
		return true, true
	}
	return false, false
}

// media reads one audio stream of desc.
func media(desc *psdp.SessionDescription, md *psdp.MediaDescription) (Media, error) {
	m := Media{
		SessionID:      desc.Origin.SessionID,
		SessionVersion: desc.Origin.SessionVersion,
		Direction:      direction(desc, md),
	}
	port := uint16(md.MediaName.Port.Value)
	addr, err := connection(desc, md)
	switch {
	case err != nil && port != 0:
		return Media{}, err
	case err != nil:
		addr = netip.IPv4Unspecified() // a declined stream needs no address
	}
	m.Addr = netip.AddrPortFrom(addr, port)
	m.Secure, _ = secureProto(md.MediaName.Protos)
	if m.Secure {
		if m.Crypto, err = cryptoLines(md); err != nil {
			return Media{}, err
		}
	}
	m.Codecs, m.DTMF, m.DTMFRate = codecs(md)
	if v, ok := md.Attribute("ptime"); ok {
		if ms, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && ms > 0 && ms <= 1000 {
			m.Ptime = time.Duration(ms) * time.Millisecond
		}
	}
	return m, nil
}

// connection returns the stream's c= address, else the session's. Only a unicast IP
// address will do: a hostname would need a lookup the call cannot wait for, and multicast
// is not how a phone call is carried.
func connection(desc *psdp.SessionDescription, md *psdp.MediaDescription) (netip.Addr, error) {
	c := md.ConnectionInformation
	if c == nil {
		c = desc.ConnectionInformation
	}
	if c == nil || c.Address == nil {
		return netip.Addr{}, fmt.Errorf("%w: no c= line", ErrAddress)
	}
	a, err := netip.ParseAddr(c.Address.Address)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%w: %q is not an IP address", ErrAddress, clip(c.Address.Address))
	}
	if (c.AddressType == "IP4") != a.Is4() || a.IsMulticast() || c.Address.TTL != nil || c.Address.Range != nil {
		return netip.Addr{}, fmt.Errorf("%w: %s %q", ErrAddress, c.AddressType, clip(c.Address.Address))
	}
	// A peer may write an IPv4 address in its IPv6-mapped form: one address, one spelling.
	return a.Unmap(), nil
}

// direction is the stream's direction attribute, else the session's, else sendrecv.
func direction(desc *psdp.SessionDescription, md *psdp.MediaDescription) Direction {
	for _, attrs := range [][]psdp.Attribute{md.Attributes, desc.Attributes} {
		for _, a := range attrs {
			switch d := Direction(a.Key); d {
			case SendRecv, SendOnly, RecvOnly, Inactive:
				return d
			}
		}
	}
	return SendRecv
}

// codecs reads the stream's formats in order: the codecs Handset speaks, and the
// telephone-event type (the 8000 Hz one when several are listed).
func codecs(md *psdp.MediaDescription) (known []Codec, dtmf uint8, dtmfRate int) {
	rtpmaps := map[uint8]string{}
	for _, a := range md.Attributes {
		if a.Key != "rtpmap" {
			continue
		}
		pt, rest, ok := strings.Cut(a.Value, " ")
		n, err := strconv.ParseUint(pt, 10, 7)
		if ok && err == nil {
			if _, dup := rtpmaps[uint8(n)]; !dup {
				rtpmaps[uint8(n)] = strings.TrimSpace(rest)
			}
		}
	}
	seen := map[uint8]bool{}
	for _, f := range md.MediaName.Formats {
		n, err := strconv.ParseUint(f, 10, 7)
		if err != nil || seen[uint8(n)] {
			continue
		}
		pt := uint8(n)
		seen[pt] = true
		name, rate, ok := encoding(pt, rtpmaps)
		if !ok {
			continue
		}
		switch {
		case name == "TELEPHONE-EVENT":
			if dtmf == 0 && dtmfRate == 0 || dtmfRate != 8000 && rate == 8000 {
				dtmf, dtmfRate = pt, rate
			}
		case name == PCMU.Name && rate == 8000:
			known = append(known, Codec{Name: PCMU.Name, PayloadType: pt, ClockRate: 8000})
		case name == PCMA.Name && rate == 8000:
			known = append(known, Codec{Name: PCMA.Name, PayloadType: pt, ClockRate: 8000})
		case name == G722.Name && (rate == 8000 || rate == 16000):
			// 16000 is a common mistake for G.722's RTP clock; the audio is the same.
			known = append(known, Codec{Name: G722.Name, PayloadType: pt, ClockRate: 8000})
		}
	}
	return known, dtmf, dtmfRate
}

// encoding names a payload type from its rtpmap, else from the static table (RFC 3551).
func encoding(pt uint8, rtpmaps map[uint8]string) (name string, rate int, ok bool) {
	m, mapped := rtpmaps[pt]
	if !mapped {
		switch pt {
		case PCMU.PayloadType:
			return PCMU.Name, 8000, true
		case PCMA.PayloadType:
			return PCMA.Name, 8000, true
		case G722.PayloadType:
			return G722.Name, 8000, true
		}
		return "", 0, false
	}
	parts := strings.Split(m, "/")
	if len(parts) < 2 || len(parts) > 3 || len(parts) == 3 && parts[2] != "1" {
		return "", 0, false // malformed, or more than one channel
	}
	rate, err := strconv.Atoi(parts[1])
	if err != nil || rate <= 0 {
		return "", 0, false
	}
	return strings.ToUpper(parts[0]), rate, true
}

// cryptoLines reads the a=crypto lines of a secure stream.
func cryptoLines(md *psdp.MediaDescription) ([]Crypto, error) {
	var out []Crypto
	for _, a := range md.Attributes {
		if a.Key != "crypto" {
			continue
		}
		if len(out) == maxCrypto {
			return nil, fmt.Errorf("%w: more than %d crypto lines", ErrBadCrypto, maxCrypto)
		}
		c, err := parseCrypto(a.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// ParseAnswer reads the answer to Handset's offer and checks it chose from what was
// offered: each codec a payload type Handset listed for it, a key answering one Handset
// offered. A telephone-event type other than Handset's is dropped (DTMF then comes only as
// SIP INFO) rather than failing the call. A declined stream is ErrNoAudio.
func ParseAnswer(body []byte, offered Local) (Media, error) {
	m, err := Parse(body)
	if err != nil {
		return Media{}, err
	}
	if m.Addr.Port() == 0 {
		return Media{}, fmt.Errorf("%w: the answer declined the audio stream", ErrNoAudio)
	}
	for _, c := range m.Codecs {
		if !offers(offered.Codecs, c) {
			return Media{}, fmt.Errorf("%w: %s as payload type %d", ErrNotOffered, c.Name, c.PayloadType)
		}
	}
	if len(m.Codecs) == 0 {
		return Media{}, ErrNoCommonCodec
	}
	if m.DTMF != offered.DTMF || m.DTMFRate != 8000 {
		m.DTMF, m.DTMFRate = 0, 0
	}
	switch {
	case m.Secure && len(offered.Crypto) == 0:
		return Media{}, fmt.Errorf("%w: secure RTP", ErrNotOffered)
	case !m.Secure && len(offered.Crypto) > 0:
		return Media{}, fmt.Errorf("%w: the answer to a secure offer is plain RTP", ErrSecureUnsupported)
	case m.Secure:
		c, ok := answeredKey(m.Crypto, offered.Crypto)
		if !ok {
			return Media{}, fmt.Errorf("%w: no key answers one offered", ErrSecureUnsupported)
		}
		m.Crypto = []Crypto{c}
	}
	m.streams, m.audio = nil, 0
	return m, nil
}

// offers reports whether c is one of codecs under the same payload type.
func offers(codecs []Codec, c Codec) bool {
	for _, o := range codecs {
		if o.Name == c.Name && o.PayloadType == c.PayloadType {
			return true
		}
	}
	return false
}

// answeredKey finds the answer's usable key whose tag and suite are one Handset offered.
func answeredKey(answered, offered []Crypto) (Crypto, bool) {
	for _, a := range answered {
		for _, o := range offered {
			if a.Tag == o.Tag && a.Suite == o.Suite && a.Usable() {
				return a, true
			}
		}
	}
	return Crypto{}, false
}

// clip shortens what an error quotes from the network.
func clip(s string) string {
	const limit = 48
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}
