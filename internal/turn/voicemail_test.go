package turn

import (
	"testing"
	"time"
)

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

// A carrier that judged "machine" during the greeting (it cannot hear the beep): the
// message waits for the greeting and its beep to end, then plays whole.
func TestVoicemailWaitsForTheGreetingToEnd(t *testing.T) {
	m := run(awaitingGreeting(), []step{
		{0, start}, {300, speech}, {2500, quiet}, // "Hi, you've reached…"
		{2900, speech}, {3100, quiet}, // …then, after a pause, the beep
	}, 4200)
	mustNotContain(t, m.log, "say", "end")
	m.advance(at(4400))
	mustContain(t, m.log, "4300:note voicemail.greeting_over", `4300:say 0 "Your order has shipped."`)
	m.at(4400, wire(0))
	m.at(4450, said(0, "Your order has shipped."))
	m.at(4500, queued(0))
	m.at(5000, speech) // the recording's own noise does not cut the message
	mustNotContain(t, m.log, "clear_playout")
	m.at(6000, played(0))
	mustContain(t, m.log, "6000:end agent_hangup")
}

// A greeting that never comes (a mailbox that beeps at once, or silence): the message
// starts after NoGreeting.
func TestVoicemailWithoutAGreetingStartsAfterAWhile(t *testing.T) {
	m := run(awaitingGreeting(), []step{{0, start}}, 4900)
	mustNotContain(t, m.log, "say")
	m.advance(at(5100))
	mustContain(t, m.log, `5000:say 0 "Your order has shipped."`)
}

func awaitingGreeting() Config {
	return with(func(c *Config) {
		c.FirstMessage = "Your order has shipped."
		c.Voicemail, c.AwaitGreeting = true, true
		c.GreetingQuiet, c.NoGreeting = 1200*time.Millisecond, 5*time.Second
	})
}
