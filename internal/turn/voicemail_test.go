package turn

import "testing"

// A delivery that reached an answering machine: the message plays whole whatever the line
// does (a recording's beep or background noise is no caller), then the call ends.
func TestVoicemailPlaysWholeThenHangsUp(t *testing.T) {
	cfg := with(func(c *Config) { c.FirstMessage = "Your order has shipped."; c.Voicemail = true })
	m := run(cfg, []step{
		{0, start}, {100, wire(0)}, {150, said(0, "Your order has shipped.")}, {200, queued(0)},
		{900, speech}, {1200, final("please leave a message after the tone")}, {1300, dtmf("1")}, {1400, quiet},
	}, 0)
	mustNotContain(t, m.log, "cancel_turn", "clear_playout", "record_interrupted", "dispatch", "end")
	m.at(2500, played(0))
	mustContain(t, m.log, "2500:end agent_hangup")
	if m.s.Phase != Ended {
		t.Errorf("phase %v after the message played, want ended", m.s.Phase)
	}
}

func TestVoicemailWithNothingToSayEndsAtOnce(t *testing.T) {
	m := run(with(func(c *Config) { c.FirstMessage = ""; c.Voicemail = true }), []step{{0, start}}, 0)
	mustContain(t, m.log, "0:end agent_hangup")
}

// Without Voicemail the same line noise interrupts the greeting, as for any caller.
func TestGreetingStillInterruptibleWithoutVoicemail(t *testing.T) {
	m := run(with(func(c *Config) { c.FirstMessage = "Your order has shipped." }), []step{
		{0, start}, {100, wire(0)}, {150, said(0, "Your order has shipped.")}, {200, queued(0)}, {900, speech},
	}, 0)
	mustContain(t, m.log, "900:clear_playout 0")
}
