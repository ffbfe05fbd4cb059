package providers

import (
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
	"github.com/handset-voice/handset/internal/carrier/telnyx/telnyxsim"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/sim/twiliokit"
)

// The carriers' simulator kits (a fake vendor and its simulated caller), one line each,
// for `handset simulate`, `handset bench` and the whole-call tests.
func init() {
	simkit.Register(twiliokit.Kit)
	simkit.Register(telnyxsim.Kit)
	simkit.Register(plivosim.Kit)
	simkit.RegisterTool(sipsim.Kit) // RTP has no marks: simulate and bench, not the whole-call scenarios
}
