package turn

import "testing"

var noticeHeard = Input{Kind: NoticeHeard}

const recordingNotice = "This call is recorded."

// The recording notice goes first, in turn 0 before the greeting, and nothing the caller
// does cuts it: speech is held by the gate, words and keys are not heard. The greeting's
// gate opens BargeInGate after the notice has played.
func TestTheNoticeIsSaidFirstAndWhole(t *testing.T) {
	cfg := with(func(c *Config) { c.Notice = recordingNotice; c.FirstMessage = "Hi, how can I help?" })
	m := run(cfg, []step{{0, start}}, 0)
	mustContain(t, m.log, `0:say 0 "This call is recorded."`, `0:say 0 "Hi, how can I help?"`)
	if first := pick(m.log, "say"); len(first) != 2 || first[0] != `0:say 0 "This call is recorded."` {
		t.Fatalf("says %v: the recordingNotice must come first", first)
	}
	m.at(50, final("hello is anyone there")) // before the notice's audio is out
	m.at(100, wire(0))
	m.at(150, said(0, recordingNotice))
	m.at(300, speech)
	m.at(700, final("stop talking"))
	m.at(800, dtmf("0"))
	m.at(900, quiet)
	m.advance(at(1900)) // long past a gate counted from the first audio
	m.at(1950, speech)
	mustNotContain(t, m.log, "cancel_turn", "clear_playout", "record_interrupted", "dispatch")
	m.at(2000, quiet)
	m.at(2100, noticeHeard)
	mustContain(t, m.log, "2100:arm gate")
	m.at(2200, speech) // inside the greeting's gate: held, not an interruption
	mustNotContain(t, m.log, "clear_playout")
	m.at(2300, quiet)
	m.at(2700, speech) // the gate is open: the greeting can be interrupted
	mustContain(t, m.log, "2700:clear_playout 0")
}

func TestANoticeWithoutGreetingIsTheFirstTurn(t *testing.T) {
	m := run(with(func(c *Config) { c.Notice = recordingNotice; c.FirstMessage = "" }), []step{
		{0, start}, {100, wire(0)}, {150, said(0, recordingNotice)}, {200, queued(0)}, {500, speech}, {900, quiet},
		{1500, noticeHeard}, {1500, played(0)},
	}, 0)
	if says := pick(m.log, "say"); len(says) != 1 {
		t.Errorf("says %v: only the recordingNotice", says)
	}
	mustNotContain(t, m.log, "clear_playout", "dispatch")
	if m.s.Noticing || m.s.Phase == Speaking || m.s.Phase == Draining {
		t.Errorf("after the recordingNotice played: phase %v, noticing %v", m.s.Phase, m.s.Noticing)
	}
}

func TestWithoutANoticeTheGreetingIsUnchanged(t *testing.T) {
	m := run(with(func(c *Config) { c.FirstMessage = "Hi." }), []step{{0, start}, {100, wire(0)}}, 0)
	mustContain(t, m.log, "100:arm gate")
	if len(pick(m.log, "say")) != 1 || m.s.Noticing {
		t.Error("a recordingNotice was said though none is set")
	}
}
