package turn

import "testing"

// A caller who adds to what they said while the agent thinks is heard even when STT's
// final comes just after the filler reached the wire, inside the barge-in gate: the words
// were spoken before anything of the reply, so, as in thinking, the turn in flight gives
// way to one that carries both. Dropping them left the caller unheard.
func TestFinalInsideTheGateOfTheFillerIsATurn(t *testing.T) {
	m := run(base, []step{
		{0, final("check my orders")}, {4050, filler(1, "One moment please.")}, {4100, wire(1)},
		{4200, final("the one from monday")},
	}, 0)
	mustContain(t, m.log, "4200:cancel_turn 1", "4200:clear_playout 1", `4200:dispatch 2 "the one from monday"`)
	// Nothing of the agent's was heard: no interruption to record.
	mustNotContain(t, m.log, "record_interrupted")

	// A partial inside the gate is not yet words to act on.
	m = run(base, []step{
		{0, final("check my orders")}, {4050, filler(1, "One moment please.")}, {4100, wire(1)},
		{4200, partial("the one from")},
	}, 0)
	mustNotContain(t, m.log, "4200:")

	// Once a sentence of the reply is on its way, the gate protects it as before.
	m = run(base, []step{
		{0, final("check my orders")}, {4050, filler(1, "One moment please.")}, {4100, wire(1)},
		{4150, said(1, "You have two orders.")}, {4200, final("the one from monday")},
	}, 0)
	mustNotContain(t, m.log, "4200:")

	// When STT hears the line while the agent speaks, a final inside the gate may be the
	// filler's own echo: it is left to the gate.
	m = run(with(func(c *Config) { c.ForwardSTTWhileSpeaking = true }), []step{
		{0, final("check my orders")}, {4050, filler(1, "One moment please.")}, {4100, wire(1)},
		{4200, final("one moment")},
	}, 0)
	mustNotContain(t, m.log, "4200:")
}
