package carrier

import "testing"

// TestStatusRank: a call's statuses rank in the order a call lives them; every final one
// ranks alike, and a word Handset does not know ranks below all.
func TestStatusRank(t *testing.T) {
	life := []Status{"", StatusQueued, StatusRinging, StatusInProgress, StatusCompleted}
	for i := 1; i < len(life); i++ {
		if life[i-1].Rank() >= life[i].Rank() {
			t.Errorf("%q ranks %d, not below %q's %d", life[i-1], life[i-1].Rank(), life[i], life[i].Rank())
		}
	}
	for _, s := range []Status{StatusBusy, StatusNoAnswer, StatusFailed, StatusCanceled} {
		if s.Rank() != StatusCompleted.Rank() {
			t.Errorf("final %q ranks %d, want %d", s, s.Rank(), StatusCompleted.Rank())
		}
	}
	if r := Status("paused").Rank(); r != RankNone {
		t.Errorf("an unknown status ranks %d, want none", r)
	}
}

// TestVerdictRank: only a machine's first verdict can be refined.
func TestVerdictRank(t *testing.T) {
	for a, want := range map[AnsweredBy]int{
		"": VerdictNone, AnsweredMachine: VerdictProvisional, AnsweredHuman: VerdictFinal, AnsweredBeep: VerdictFinal,
		AnsweredSilence: VerdictFinal, AnsweredOther: VerdictFinal, AnsweredFax: VerdictFinal, AnsweredUnknown: VerdictFinal,
	} {
		if got := a.Rank(); got != want {
			t.Errorf("%q ranks %d, want %d", a, got, want)
		}
	}
}

// TestMergeKeepsFirstName: the merged word keeps the name the call was first known by.
func TestMergeKeepsFirstName(t *testing.T) {
	got := Progress{Ref: "call-a"}.Merge(Progress{Ref: "request-a", Status: StatusRinging})
	if got.Ref != "call-a" || got.Status != StatusRinging {
		t.Errorf("merged %+v", got)
	}
	if got := (Progress{}).Merge(Progress{Ref: "call-b"}); got.Ref != "call-b" {
		t.Errorf("a first word's ref was not kept: %+v", got)
	}
}
