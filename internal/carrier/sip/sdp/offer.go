package sdp

// Offer writes Handset's offer: for an outbound INVITE, or a re-INVITE (put the peer on
// hold with local.Direction SendOnly, take it off with SendRecv and a bumped Version).
// It lists local.Codecs in order, then telephone-event when local.DTMF is set. An error
// says what in local cannot be offered (no codecs, an invalid address).
func Offer(local Local) ([]byte, error) {
	panic("not implemented")
}
