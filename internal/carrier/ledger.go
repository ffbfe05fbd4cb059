package carrier

// The call ledger's rules: how the words a carrier's webhooks say about a call, which may
// arrive late, twice or out of order, add up to the latest word on it. Memory
// implementations (the gateway's store-backed one, carriertest's map) follow them.

// Status ranks: a word on a call replaces the kept status only with a higher rank.
const (
	RankNone     = 0 // no status
	RankQueued   = 1
	RankRinging  = 2
	RankAnswered = 3
	RankEnded    = 4 // every final status: the first to arrive is kept
)

// Rank orders s in a call's life; statuses Handset does not know rank with none.
func (s Status) Rank() int {
	switch {
	case s.Ended():
		return RankEnded
	case s == StatusInProgress:
		return RankAnswered
	case s == StatusRinging:
		return RankRinging
	case s == StatusQueued:
		return RankQueued
	}
	return RankNone
}

// Verdict ranks: a verdict replaces the kept one only with a higher rank.
const (
	VerdictNone        = 0
	VerdictProvisional = 1 // AnsweredMachine: a machine, its greeting not over yet
	VerdictFinal       = 2
)

// Rank says how settled a is: a machine known as soon as it spoke may later be told apart
// by how its greeting ended; every other verdict is final.
func (a AnsweredBy) Rank() int {
	switch a {
	case "":
		return VerdictNone
	case AnsweredMachine:
		return VerdictProvisional
	}
	return VerdictFinal
}

// Merge is the latest word on a call that p was the latest word on, once next arrives. The
// Ref is p's (the name the call was first known by).
func (p Progress) Merge(next Progress) Progress {
	out := p
	if next.Status.Rank() > p.Status.Rank() {
		out.Status = next.Status
	}
	if next.AnsweredBy.Rank() > p.AnsweredBy.Rank() {
		out.AnsweredBy = next.AnsweredBy
	}
	if out.Duration == 0 {
		out.Duration = next.Duration
	}
	if out.CallID == "" {
		out.CallID = next.CallID
	}
	if out.Ref == "" {
		out.Ref = next.Ref
	}
	out.Declined = p.Declined || next.Declined
	return out
}
