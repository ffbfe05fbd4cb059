package sdp

// Answer writes Handset's answer to a peer's offer (RFC 3264) and returns it with the
// stream agreed: Addr is where to send RTP (the peer's), Codecs holds the one codec chosen
// and DTMF the peer's telephone-event type when both sides have it.
//
// The codec is Handset's first preference among those offered, not the offerer's: Handset
// decodes and encodes every call and its order (set by configuration) says what it does
// best, while a trunk's order is usually a fixed list across all its customers. Payload
// type numbers are the offerer's. The direction mirrors the offer's (sendonly is answered
// recvonly) narrowed by local.Direction. A declined stream (port 0) is answered declined
// with agreed.Addr's port 0.
//
// ErrNoCommonCodec when no offered codec is one of local.Codecs; ErrSecureUnsupported
// when the offer is RTP/SAVP and no offered key matches a suite of local.Crypto. A secure
// answer's agreed.Crypto holds the peer's chosen key; Handset's is the local.Crypto entry
// of the same suite.
func Answer(offer Media, local Local) (answer []byte, agreed Media, err error) {
	panic("not implemented")
}
