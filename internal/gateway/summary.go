package gateway

import (
	"context"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// summarize keeps with call id's store record what its journal says of it, so the
// dashboard lists calls without reading journals. A journal that cannot be read costs the
// call its summary, never more: it is logged.
func (s *server) summarize(ctx context.Context, id voice.CallID) {
	path := journalPath(s.cfg.DataDir, id)
	events, err := obs.ReadFile(path)
	if err != nil {
		s.log.Warn("call summary not kept: its journal cannot be read", "call", id, "err", err)
		return
	}
	if err := s.st.SummarizeCall(ctx, id, callSummary(events)); err != nil {
		s.log.Warn("call summary not kept in the store", "call", id, "err", err)
	}
}

// callSummary is what a journal says of its call: caller turns, how many the caller cut
// short, and diagnose's first broken stage with its words.
func callSummary(events []obs.Event) store.CallSummary {
	turns := obs.Turns(events)
	sum := store.CallSummary{Turns: len(turns)}
	for _, t := range turns {
		if t.Interrupted {
			sum.Interrupted++
		}
	}
	if v := obs.Diagnose(events); v.Problem != obs.Healthy {
		sum.Stage, sum.Problem = v.Stage, voice.Clip(v.Problem, voice.MessageLimit)
	}
	return sum
}
