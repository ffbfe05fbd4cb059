package call

import (
	"encoding/json"
	"fmt"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/voice"
)

// decisionTypes are the journal events that record what the turn machine decided.
var decisionTypes = map[string]bool{
	obs.TurnCommit: true, obs.Clear: true, obs.BargeIn: true,
	turn.NoteBargeInPending: true, turn.NoteBargeInResumed: true, turn.NoteGateSuppressed: true,
	turn.NoteRescue: true, turn.NoteDropped: true, turn.NoteFiller: true, turn.NoteReprompt: true,
	turn.NoteSTTNotice: true, turn.NoteGreetingOver: true,
}

// Decision is one turn-taking decision, as comparable between a journal and a replay.
type Decision struct {
	Type string
	Turn int
	Text string // the committed or dropped text
}

func (d Decision) String() string { return fmt.Sprintf("%s turn=%d %q", d.Type, d.Turn, d.Text) }

// Decisions lists the decisions a journal recorded.
func Decisions(events []obs.Event) []Decision {
	var out []Decision
	for _, e := range events {
		if decisionTypes[e.Type] {
			d := Decision{Type: e.Type, Turn: e.Turn}
			if e.Type == obs.TurnCommit || e.Type == turn.NoteDropped {
				d.Text = e.Text
			}
			out = append(out, d)
		}
	}
	return out
}

// Replay feeds a journal's recorded inputs back through the turn machine, at their
// recorded times and with the configuration in call.start, and returns the decisions it
// makes. A call that went wrong can be reproduced, and stepped through, from its journal.
func Replay(events []obs.Event) ([]Decision, error) {
	if len(events) == 0 || events[0].Type != obs.CallStart {
		return nil, fmt.Errorf("replay: the journal does not begin with %s", obs.CallStart)
	}
	var cfg turn.Config
	if len(events[0].TurnConfig) == 0 {
		return nil, fmt.Errorf("replay: %s carries no turn_config (journal from an older Handset)", obs.CallStart)
	}
	if err := json.Unmarshal(events[0].TurnConfig, &cfg); err != nil {
		return nil, fmt.Errorf("replay: turn_config: %w", err)
	}
	s := turn.New(cfg)
	var out []Decision
	for _, e := range events {
		in, ok := replayInput(e)
		if !ok {
			continue
		}
		var acts []turn.Action
		s, acts = turn.Step(s, in, e.TS)
		for _, a := range acts {
			switch a.Kind {
			case turn.Dispatch:
				out = append(out, Decision{Type: obs.TurnCommit, Turn: a.Turn, Text: a.Text})
			case turn.ClearPlayout:
				out = append(out, Decision{Type: obs.Clear, Turn: a.Turn})
			case turn.RecordInterrupted:
				out = append(out, Decision{Type: obs.BargeIn, Turn: a.Turn})
			case turn.Note:
				d := Decision{Type: a.Reason, Turn: a.Turn}
				if a.Reason == turn.NoteDropped {
					d.Text = a.Text
				}
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// replayInput is the machine input a journal event records, if any.
func replayInput(e obs.Event) (turn.Input, bool) {
	switch e.Type {
	case obs.CallStart:
		return turn.Input{Kind: turn.CallStarted}, true
	case obs.VADSpeechStart:
		return turn.Input{Kind: turn.SpeechStart}, true
	case obs.VADSpeechEnd:
		return turn.Input{Kind: turn.SpeechEnd}, true
	case obs.STTFinal, obs.STTPartial:
		return turn.Input{Kind: turn.Transcript, Text: e.Text, Final: e.Type == obs.STTFinal}, true
	case obs.DTMF:
		return turn.Input{Kind: turn.DTMF, Text: e.Digit}, true
	case obs.TTSRequest:
		return turn.Input{Kind: turn.SentenceQueued, Turn: e.Turn, Text: e.Text, Filler: e.Kind == "filler"}, true
	case obs.PlayoutFirstAudio:
		return turn.Input{Kind: turn.AudioOnWire, Turn: e.Turn}, true
	case obs.PlayoutQueued:
		return turn.Input{Kind: turn.SpeechQueued, Turn: e.Turn}, true
	case obs.PlayoutDone:
		return turn.Input{Kind: turn.PlayoutDone, Turn: e.Turn}, true
	case obs.AgentDone:
		return turn.Input{Kind: turn.AgentDone, Turn: e.Turn, Text: e.Text}, true
	case obs.AgentError:
		return turn.Input{Kind: turn.AgentError, Turn: e.Turn, Text: e.Kind}, true
	case obs.AgentProgress:
		return turn.Input{Kind: turn.AgentProgress, Turn: e.Turn, Text: e.Text}, true
	case obs.STTLost:
		return turn.Input{Kind: turn.STTLost}, true
	case obs.STTRecovered:
		return turn.Input{Kind: turn.STTRestored}, true
	case obs.TimerFired:
		if id, ok := turn.TimerByName(e.Name); ok {
			return turn.Input{Kind: turn.TimerFired, Timer: id, Gen: uint32(e.Count)}, true
		}
	case obs.CallGoodbye:
		return turn.Input{Kind: turn.Goodbye, Text: e.Text}, true
	case obs.CallEnd:
		if e.Reason == voice.EndCallerHangup.String() {
			return turn.Input{Kind: turn.Hangup}, true
		}
	}
	return turn.Input{}, false
}
