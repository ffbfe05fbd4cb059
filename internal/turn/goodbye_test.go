package turn

import "testing"

const bye = "Sorry, I have to hang up now. Please call again."

// A stopping server's goodbye cuts the reply on the wire (cancel and clear), is said whole
// whatever the caller does, and ends the call once the carrier has played it.
func TestGoodbyeCutsTheReplyAndEndsOnceHeard(t *testing.T) {
	m := run(base, []step{
		{0, start}, {100, wire(0)}, {200, queued(0)}, {1500, played(0)},
		{4000, speech}, {5000, quiet}, {5200, final("tell me everything")},
		{6000, wire(1)}, {6100, said(1, "Well, there is a lot.")},
	}, 0)
	m.at(7000, Input{Kind: Goodbye, Text: bye})
	mustContain(t, m.log, "7000:cancel_turn 1", "7000:clear_playout 1", `7000:say 2 "`+bye+`"`)
	if len(m.timers) != 0 {
		t.Errorf("timers still armed for the goodbye: %v", m.timers)
	}
	// Nothing the caller does interrupts it; a second goodbye changes nothing.
	before := len(m.log)
	m.at(7100, wire(2))
	m.at(7200, said(2, bye))
	m.at(7300, queued(2))
	m.at(7400, speech)
	m.at(7600, final("wait, one more thing"))
	m.at(7700, dtmf("1"))
	m.at(7800, Input{Kind: Goodbye, Text: bye})
	mustNotContain(t, m.log[before:], "cancel_turn", "clear_playout", "dispatch", "end", "say")
	m.at(9500, played(2))
	mustContain(t, m.log, "9500:end shutdown")
	if m.s.Phase != Ended || m.ends != 1 {
		t.Errorf("phase %v, %d ends, want one end once the goodbye played", m.s.Phase, m.ends)
	}
}

// Idle or thinking, the goodbye still goes out; a turn still being written is cancelled.
func TestGoodbyeWhileTheAgentThinks(t *testing.T) {
	m := run(base, []step{
		{0, start}, {100, wire(0)}, {200, queued(0)}, {1500, played(0)}, {3000, final("what are your hours")},
	}, 0)
	m.at(3500, Input{Kind: Goodbye, Text: bye})
	mustContain(t, m.log, "3500:cancel_turn 1", `3500:say 2 "`+bye+`"`)
	mustNotContain(t, m.log, "clear_playout")
	m.at(3600, wire(2))
	m.at(3700, queued(2))
	m.at(6000, played(2))
	mustContain(t, m.log, "6000:end shutdown")
}

// With no goodbye to say, the call ends at once.
func TestEmptyGoodbyeEndsAtOnce(t *testing.T) {
	m := run(base, []step{{0, start}, {100, wire(0)}}, 0)
	m.at(500, Input{Kind: Goodbye})
	mustContain(t, m.log, "500:cancel_turn 0", "500:end shutdown")
	mustNotContain(t, m.log, "say 1")
}
