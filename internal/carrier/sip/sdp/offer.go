package sdp

import psdp "github.com/pion/sdp/v3"

// Offer writes Handset's offer: for an outbound INVITE, or a re-INVITE (put the peer on
// hold with local.Direction SendOnly, take it off with SendRecv and a bumped Version).
// It lists local.Codecs in order, then telephone-event when local.DTMF is set, and is
// RTP/SAVP with a=crypto lines when local.Crypto is set. An error says what in local
// cannot be offered (no codecs, an invalid address).
func Offer(local Local) ([]byte, error) {
	if err := local.check(); err != nil {
		return nil, err
	}
	audio := &psdp.MediaDescription{MediaName: psdp.MediaName{
		Media:  "audio",
		Port:   psdp.RangedPort{Value: int(local.Addr.Port())},
		Protos: protos(len(local.Crypto) > 0),
	}}
	describe(audio, local.Codecs, local.DTMF, local.Ptime, local.Direction)
	for _, c := range local.Crypto {
		audio.Attributes = append(audio.Attributes, psdp.NewAttribute("crypto", c.value()))
	}
	return marshal(local, audio, Media{}), nil
}
