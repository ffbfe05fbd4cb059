package sdp

// Parse reads a peer's SDP body (an offer, or an answer before the offer it answers is
// known) and returns its audio stream: the first audio m= line with a non-zero port, or the
// first audio line when all are declined. Other media lines are ignored.
func Parse(body []byte) (Media, error) {
	panic("not implemented")
}

// ParseAnswer reads the answer to Handset's offer and checks it chose from what was
// offered: each codec a payload type Handset listed, and telephone-event only if offered.
func ParseAnswer(body []byte, offered Local) (Media, error) {
	panic("not implemented")
}
