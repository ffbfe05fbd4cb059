package cli

import (
	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/config"
)

// What Handset knows about an OpenClaw gateway that does not answer as it should is the
// openclaw package's (openclaw.SymptomOf): these read it with the configuration, for start-up,
// `handset test` and `handset agents`.

// ocSymptom is one failure Handset knows the fix for.
type ocSymptom openclaw.Symptom

// The symptoms start-up treats apart.
const (
	ocStarting    = ocSymptom(openclaw.SymptomStarting)
	ocUnreachable = ocSymptom(openclaw.SymptomUnreachable)
)

// openClawSymptom reads err, from the gateway's WebSocket (connect, agents.list, a turn),
// SelectAgent, or the HTTP endpoint's turn.
func openClawSymptom(cfg *config.Config, err error) ocSymptom {
	return ocSymptom(openclaw.SymptomOf(cfg, err))
}

// advice is what to say about s, and what to do; ok is false when Handset knows no better.
func (s ocSymptom) advice(cfg *config.Config, err error) (detail, fix string, ok bool) {
	return openclaw.Symptom(s).Advice(cfg, err)
}

// openClawFix is the fix for err, or general when Handset knows no better.
func openClawFix(cfg *config.Config, err error, general string) string {
	return openclaw.Fix(cfg, err, general)
}
