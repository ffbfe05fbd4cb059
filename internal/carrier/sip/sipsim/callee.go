package sipsim

import (
	"github.com/emiago/sipgo/sip"
)

// A Caller can stand on the other side too: the trunk's far end for the calls Handset
// places through it (an outbound call, or the second leg of a transfer Handset bridges).

// AnswerOptions shape how a Caller answers the INVITEs Handset sends it.
type AnswerOptions struct {
	// Codec is "PCMU" (default) or "PCMA": the codec the answer picks, when offered.
	Codec string
	// Status, when set and not 200, is the final status every INVITE gets instead of an
	// answer (486 Busy Here, 480 Temporarily Unavailable…).
	Status int
}

// answering is how the Caller answers INVITEs, and where the answered calls go.
type answering struct {
	o     AnswerOptions
	calls chan *Call
}

// Answer makes the caller answer the INVITEs Handset sends it as o says, and returns the
// channel each answered call arrives on once Handset acknowledged it. Call it before the
// INVITEs come; later calls do nothing but return the same channel.
func (c *Caller) Answer(o AnswerOptions) <-chan *Call { panic("not yet") }

// refuseRefer answers a REFER with the configured status; false when the caller carries
// transfers out.
func (c *Caller) refuseRefer(req *sip.Request, tx sip.ServerTransaction) bool {
	if c.referStatus == 0 {
		return false
	}
	_ = tx.Respond(sip.NewResponseFromRequest(req, c.referStatus, "Refused", nil))
	return true
}
