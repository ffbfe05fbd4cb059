package obs

import (
	"testing"

	"github.com/handset-voice/handset/internal/registry"
)

// A carrier's words in diagnose's advice come from its registry entry, so a carrier added
// later needs no edit here.
func TestDiagnoseCarrierWordsComeFromTheRegistry(t *testing.T) {
	registry.Register(registry.Carrier{About: registry.About{Name: "obs-test-line", Title: "Obs Test Line",
		Hints: registry.Hints{NoMediaFix: "Check the obs-test-line stream route."}}})
	start := startedWith("openai", "deepgram", "elevenlabs")
	start.Carrier = "obs-test-line"
	v := Diagnose([]Event{start, ev(10, TTSRequest), ev(100, TTSFirstByte), ev(110, PlayoutFirstAudio),
		ev(2400, CallEnd, withReason("caller_hangup"))})
	checkVerdict(t, v, want{stage: "carrier", problem: []string{"Obs Test Line connected but sent no audio"},
		fix: []string{"Check the obs-test-line stream route."}})

	// A carrier the catalogue does not know gets advice that fits any carrier.
	start.Carrier = "unlisted-line"
	v = Diagnose([]Event{start, ev(2400, CallEnd, withReason("caller_hangup"))})
	checkVerdict(t, v, want{stage: "carrier", problem: []string{"unlisted-line connected but sent no audio"},
		fix: []string{"check the carrier's stream settings"}})
}
