package dashboard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Kinds of conversation line; the page styles each.
const (
	lineCaller = "caller"
	lineAgent  = "agent"
	lineFiller = "filler"
	lineSpoken = "spoken-error" // the error message Handset spoke for a failed turn
	lineNote   = "note"
	lineError  = "error"
)

// convLine is one line of a call's conversation as the page shows it.
type convLine struct {
	MS      int64 // call time; -1 when unknown
	Kind    string
	Who     string
	Turn    int
	Text    string
	Barged  bool   // the caller cut the agent off: Heard reached them, Unheard did not
	Heard   string // the part of the reply the caller heard
	Unheard string // the rest of it, never played
}

// turnFacts are what a turn's events say of its reply.
type turnFacts struct {
	done       *obs.Event // agent.done: the whole reply
	heard      *obs.Event // barge_in: the part heard
	firstAudio int64      // the reply's first audio on the wire; -1 when none
	failedAt   int64      // agent.error; -1 when none
}

// conversation reads the conversation from a call's journal, in call time: caller turns,
// agent replies (heard and unheard parts of a cut-off one), fillers, spoken error messages,
// key presses, transfers, handoffs, echo notes and failures.
func conversation(events []obs.Event) []convLine {
	facts := map[int]*turnFacts{}
	turn := func(n int) *turnFacts {
		if facts[n] == nil {
			facts[n] = &turnFacts{firstAudio: -1, failedAt: -1}
		}
		return facts[n]
	}
	for i := range events {
		e := &events[i]
		switch e.Type {
		case obs.AgentDone:
			turn(e.Turn).done = e
		case obs.BargeIn:
			turn(e.Turn).heard = e
		case obs.PlayoutFirstAudio, obs.PlayoutReplyAudio:
			if t := turn(e.Turn); e.Kind != "filler" && t.firstAudio < 0 {
				t.firstAudio = e.MS
			}
		case obs.AgentError:
			if t := turn(e.Turn); t.failedAt < 0 {
				t.failedAt = e.MS
			}
		}
	}
	var out []convLine
	spoken := map[int]int{} // turn -> its line of sentences, for a turn without agent.done
	note := func(e obs.Event, kind, text string) {
		out = append(out, convLine{MS: e.MS, Kind: kind, Who: "Handset", Turn: e.Turn, Text: text})
	}
	for _, e := range events {
		t := turn(e.Turn)
		switch e.Type {
		case obs.TurnCommit:
			out = append(out, convLine{MS: e.MS, Kind: lineCaller, Who: "Caller", Turn: e.Turn, Text: e.Text})
		case obs.AgentDone:
			at := e.MS
			if t.firstAudio >= 0 {
				at = t.firstAudio
			}
			out = append(out, reply(convLine{MS: at, Kind: lineAgent, Who: "Agent", Turn: e.Turn, Text: e.Text}, t.heard))
		case obs.TTSRequest:
			switch {
			case e.Kind == "filler":
				out = append(out, convLine{MS: e.MS, Kind: lineFiller, Who: "Handset", Turn: e.Turn, Text: e.Text})
			case t.failedAt >= 0 && e.MS >= t.failedAt:
				out = append(out, convLine{MS: e.MS, Kind: lineSpoken, Who: "Handset", Turn: e.Turn, Text: e.Text})
			case t.done == nil: // the greeting, a re-prompt, a reply cut off before it finished
				if i, ok := spoken[e.Turn]; ok {
					out[i].Text += " " + e.Text
				} else {
					spoken[e.Turn] = len(out)
					out = append(out, convLine{MS: e.MS, Kind: lineAgent, Who: "Agent", Turn: e.Turn, Text: e.Text})
				}
			}
		case obs.DTMF:
			note(e, lineNote, "The caller pressed "+e.Digit)
		case obs.TransferRequested, obs.TransferStarted, obs.HandoffRequested, obs.HandoffDone:
			note(e, lineNote, fmt.Sprintf("%s: %s", eventWords[e.Type], e.Name))
		case obs.TransferRefused, obs.TransferFailed, obs.HandoffFailed:
			note(e, lineError, fmt.Sprintf("%s: %s: %s", eventWords[e.Type], e.Name, e.Message))
		case obs.EchoSuppressed:
			note(e, lineNote, fmt.Sprintf("%d frames of caller audio were taken for the agent's echo (loudest %.1f dB): "+
				"a caller talking over the agent without interrupting shows up here", e.Count, e.LevelDB))
		case obs.AgentError, obs.STTError, obs.TTSError:
			note(e, lineError, fmt.Sprintf("%s %s: %s", eventWords[e.Type], orUnknown(e.Kind), e.Message))
		case obs.TTSLost:
			note(e, lineError, "No voice could speak this, so the caller never heard it: "+e.Text)
		case "stt.dropped":
			note(e, lineNote, "A transcript was set aside: "+e.Text)
		case obs.CallGoodbye:
			note(e, lineNote, "Handset is stopping; the call says goodbye: "+e.Text)
		case obs.CallEnd:
			note(e, lineNote, "The call ended: "+orUnknown(e.Reason))
		}
	}
	for n, i := range spoken {
		out[i] = reply(out[i], facts[n].heard)
	}
	slices.SortStableFunc(out, func(a, b convLine) int { return int(a.MS - b.MS) })
	return out
}

// reply splits an agent line the caller barged in on into what they heard and the rest.
func reply(l convLine, heard *obs.Event) convLine {
	if heard == nil {
		return l
	}
	l.Barged, l.Heard = true, strings.TrimSpace(heard.Text)
	if rest, ok := strings.CutPrefix(strings.TrimSpace(l.Text), l.Heard); ok {
		l.Unheard = strings.TrimSpace(rest)
	} else {
		l.Unheard = l.Text // the heard part is not a prefix of it: show the whole reply as not heard
	}
	return l
}

var eventWords = map[string]string{
	obs.TransferRequested: "Transfer asked for", obs.TransferStarted: "Transfer started",
	obs.TransferRefused: "Transfer refused", obs.TransferFailed: "Transfer failed",
	obs.HandoffRequested: "Handoff asked for", obs.HandoffDone: "Handed off", obs.HandoffFailed: "Handoff failed",
	obs.AgentError: "The agent failed:", obs.STTError: "Speech recognition failed:", obs.TTSError: "The voice failed:",
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// storedConversation is the conversation from the store's transcript, when the journal
// cannot be read: caller and agent lines, a cut-off reply's heard part only.
func storedConversation(c store.Call, lines []store.TranscriptLine) []convLine {
	out := make([]convLine, 0, len(lines))
	for _, l := range lines {
		cl := convLine{MS: -1, Turn: l.Turn, Text: l.Text, Kind: lineAgent, Who: "Agent"}
		if !l.At.IsZero() && !c.StartedAt.IsZero() {
			cl.MS = l.At.Sub(c.StartedAt).Milliseconds()
		}
		if l.Role == voice.RoleUser {
			cl.Kind, cl.Who = lineCaller, "Caller"
		}
		if l.Interrupted {
			cl.Barged, cl.Heard = true, l.Text
		}
		out = append(out, cl)
	}
	return out
}
