package sdp

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	psdp "github.com/pion/sdp/v3"
)

// Answer writes Handset's answer to a peer's offer (RFC 3264) and returns it with the
// stream agreed: Addr is where to send RTP (the peer's), Codecs holds the one codec chosen,
// DTMF the peer's telephone-event type when both sides have it at 8000 Hz, Ptime the
// packet duration the peer asked for, and SessionID and SessionVersion the offer's (to
// recognise a refresh in the next re-INVITE).
//
// The codec is Handset's first preference among those offered, not the offerer's: Handset
// decodes and encodes every call and its order (set by configuration) says what it does
// best, while a trunk's order is usually a fixed list across all its customers. Payload
// type numbers are the offerer's. The direction mirrors the offer's (sendonly is answered
// recvonly; an old-style hold to 0.0.0.0 is never sent to) narrowed by local.Direction.
// Every other m= line of the offer is declined (port 0), and a declined audio stream is
// answered declined with agreed.Addr's port 0.
//
// ErrNoCommonCodec when no offered codec is one of local.Codecs; ErrSecureUnsupported
// when the offer is RTP/SAVP and no offered key matches a suite of local.Crypto. A secure
// answer's agreed.Crypto holds the peer's chosen key (what decrypts its packets); Handset's
// is the local.Crypto entry of the same suite, written in the answer.
func Answer(offer Media, local Local) (answer []byte, agreed Media, err error) {
	if err := local.check(); err != nil {
		return nil, Media{}, err
	}
	agreed = Media{
		Addr:           offer.Addr,
		Direction:      answerDirection(offer, local.Direction),
		Ptime:          offer.Ptime,
		Secure:         offer.Secure,
		SessionID:      offer.SessionID,
		SessionVersion: offer.SessionVersion,
	}
	audio := &psdp.MediaDescription{MediaName: psdp.MediaName{
		Media:  "audio",
		Port:   psdp.RangedPort{Value: int(local.Addr.Port())},
		Protos: protos(offer.Secure),
	}}
	if offer.Addr.Port() == 0 {
		audio.MediaName.Port.Value = 0
		audio.MediaName.Formats = []string{offeredFormat(offer)}
		agreed.Direction = Inactive
		return marshal(local, audio, offer), agreed, nil
	}
	var ours Crypto
	if offer.Secure {
		theirs, mine, ok := pickKey(offer.Crypto, local.Crypto)
		if !ok {
			return nil, Media{}, ErrSecureUnsupported
		}
		agreed.Crypto, ours = []Crypto{theirs}, mine
		ours.Tag = theirs.Tag
	}
	codec, ok := choose(offer.Codecs, local.Codecs)
	if !ok {
		return nil, Media{}, ErrNoCommonCodec
	}
	agreed.Codecs = []Codec{codec}
	if local.DTMF != 0 && offer.DTMF != 0 && offer.DTMFRate == 8000 {
		agreed.DTMF, agreed.DTMFRate = offer.DTMF, 8000
	}
	describe(audio, agreed.Codecs, agreed.DTMF, local.Ptime, agreed.Direction)
	if agreed.Secure {
		audio.Attributes = append(audio.Attributes, psdp.NewAttribute("crypto", ours.value()))
	}
	return marshal(local, audio, offer), agreed, nil
}

// check refuses a Local that cannot be written.
func (l Local) check() error {
	if !l.Addr.Addr().IsValid() || l.Addr.Addr().Zone() != "" || l.Addr.Port() == 0 {
		return fmt.Errorf("sdp: local address %v is not an IP address and port", l.Addr)
	}
	if len(l.Codecs) == 0 {
		return errors.New("sdp: no local codecs")
	}
	for _, c := range l.Codecs {
		if c != PCMU && c != PCMA && c != G722 {
			return fmt.Errorf("sdp: local codec %+v is not PCMU, PCMA or G722", c)
		}
	}
	if l.DTMF != 0 && (l.DTMF < 96 || l.DTMF > 127) {
		return fmt.Errorf("sdp: local telephone-event payload type %d is not dynamic (96-127)", l.DTMF)
	}
	tags := map[uint32]bool{}
	for _, c := range l.Crypto {
		if !c.Usable() || tags[c.Tag] {
			return fmt.Errorf("sdp: local key %d for %s is not usable", c.Tag, c.Suite)
		}
		tags[c.Tag] = true
	}
	return nil
}

// choose returns the first of ours that the offer lists, under the offer's payload type.
func choose(offered, ours []Codec) (Codec, bool) {
	for _, want := range ours {
		for _, o := range offered {
			if o.Name == want.Name {
				return o, true
			}
		}
	}
	return Codec{}, false
}

// pickKey returns the offer's first usable key of a suite Handset has a key for, and
// Handset's key.
func pickKey(offered, ours []Crypto) (theirs, mine Crypto, ok bool) {
	for _, o := range offered {
		if !o.Usable() {
			continue
		}
		for _, m := range ours {
			if m.Suite == o.Suite {
				return o, m, true
			}
		}
	}
	return Crypto{}, Crypto{}, false
}

// answerDirection mirrors the offer's direction and keeps only what local allows. An
// old-style hold (address 0.0.0.0) receives nothing whatever its direction says.
func answerDirection(offer Media, local Direction) Direction {
	// The answerer sends what the offerer receives, and the reverse.
	send, recv := receives(offer.Direction), sends(offer.Direction)
	send = send && !offer.Addr.Addr().IsUnspecified()
	if local != "" {
		send, recv = send && sends(local), recv && receives(local)
	}
	switch {
	case send && recv:
		return SendRecv
	case send:
		return SendOnly
	case recv:
		return RecvOnly
	}
	return Inactive
}

func sends(d Direction) bool    { return d == SendRecv || d == SendOnly || d == "" }
func receives(d Direction) bool { return d == SendRecv || d == RecvOnly || d == "" }

func protos(secure bool) []string {
	if secure {
		return []string{"RTP", "SAVP"}
	}
	return []string{"RTP", "AVP"}
}

// describe lists the codecs and telephone-event on an audio line with their attributes.
func describe(md *psdp.MediaDescription, codecs []Codec, dtmf uint8, ptime time.Duration, dir Direction) {
	for _, c := range codecs {
		pt := strconv.Itoa(int(c.PayloadType))
		md.MediaName.Formats = append(md.MediaName.Formats, pt)
		md.Attributes = append(md.Attributes, psdp.NewAttribute("rtpmap", pt+" "+c.Name+"/"+strconv.Itoa(c.ClockRate)))
	}
	if dtmf != 0 {
		pt := strconv.Itoa(int(dtmf))
		md.MediaName.Formats = append(md.MediaName.Formats, pt)
		md.Attributes = append(md.Attributes,
			psdp.NewAttribute("rtpmap", pt+" telephone-event/8000"),
			psdp.NewAttribute("fmtp", pt+" 0-15"))
	}
	if ptime > 0 {
		md.Attributes = append(md.Attributes, psdp.NewAttribute("ptime", strconv.FormatInt(ptime.Milliseconds(), 10)))
	}
	if dir == "" {
		dir = SendRecv
	}
	md.Attributes = append(md.Attributes, psdp.NewPropertyAttribute(string(dir)))
}

// offeredFormat is the first format of the offer's audio line, which a declined answer
// repeats (an m= line needs one).
func offeredFormat(offer Media) string {
	if offer.audio < len(offer.streams) {
		return offer.streams[offer.audio].format
	}
	if len(offer.Codecs) > 0 {
		return strconv.Itoa(int(offer.Codecs[0].PayloadType))
	}
	return strconv.Itoa(int(PCMU.PayloadType))
}

// marshal writes a body around the audio line: Handset's origin and address, and for an
// answer every other m= line of the offer declined in its place.
func marshal(local Local, audio *psdp.MediaDescription, offer Media) []byte {
	addrType, addr := "IP4", local.Addr.Addr().Unmap()
	if addr.Is6() {
		addrType = "IP6"
	}
	desc := psdp.SessionDescription{
		Origin: psdp.Origin{
			Username: "handset", SessionID: local.SessionID, SessionVersion: local.Version,
			NetworkType: "IN", AddressType: addrType, UnicastAddress: addr.String(),
		},
		SessionName: "handset",
		ConnectionInformation: &psdp.ConnectionInformation{
			NetworkType: "IN", AddressType: addrType, Address: &psdp.Address{Address: addr.String()},
		},
		TimeDescriptions: []psdp.TimeDescription{{}},
	}
	if len(offer.streams) == 0 {
		desc.MediaDescriptions = []*psdp.MediaDescription{audio}
	}
	for i, s := range offer.streams {
		if i == offer.audio {
			desc.MediaDescriptions = append(desc.MediaDescriptions, audio)
			continue
		}
		desc.MediaDescriptions = append(desc.MediaDescriptions, &psdp.MediaDescription{MediaName: psdp.MediaName{
			Media: s.media, Port: psdp.RangedPort{Value: 0}, Protos: []string{s.proto}, Formats: []string{s.format},
		}})
	}
	body, _ := desc.Marshal() // Marshal only writes; it has no error to return
	return body
}
