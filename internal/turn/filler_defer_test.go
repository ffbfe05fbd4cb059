package turn

import "testing"

// A caller who starts a new sentence while the agent thinks is not talked over by the
// filler: it waits until they finish, and their words, final by then, are the next turn.
// Started over them, the filler took the floor (STT no longer hears the line) before their
// words were final, and they went unheard until the slow run gave up.
func TestFillerWaitsForTheCallerToFinish(t *testing.T) {
	m := run(base, []step{
		{0, final("check my orders")}, {3900, speech}, {4600, quiet}, {4900, final("the one from monday")},
	}, 6000)
	mustNotContain(t, m.log, `say 1 "One moment please."`)
	mustContain(t, m.log, "4900:cancel_turn 1", `4900:dispatch 2 "the one from monday"`)

	// Words that never become a turn (a cough): the filler goes out once they stop.
	m = run(base, []step{{0, final("check my orders")}, {3900, speech}, {4600, quiet}}, 6000)
	mustContain(t, m.log, `5300:say 1 "One moment please."`)

	// A tool starting while the caller speaks waits the same way.
	m = run(base, []step{
		{0, final("check my orders")}, {1000, speech}, {1200, Input{Kind: AgentProgress, Turn: 1, Text: "search"}},
		{1800, quiet},
	}, 3000)
	mustNotContain(t, m.log, `1200:say`)
	mustContain(t, m.log, `2500:say 1 "One moment please."`)
}
