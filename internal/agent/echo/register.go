package echo

import (
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Provider is the built-in echo agent (HANDSET_AGENT=echo): nothing to reach, nothing to set.
var Provider = registry.Agent{
	About: registry.About{
		Name:    Name,
		Title:   "the echo agent",
		Offline: true,
		Hints: registry.Hints{
			ModelFix: "The echo agent cannot fail on its own: the server log says what happened.",
			SlowFix:  "The echo agent answers at once: the host is short of CPU.",
		},
		Checks: func(p registry.Probe) []doctor.Check {
			return []doctor.Check{doctor.Fixed(p.Section, "runtime", doctor.OKResult("the built-in echo agent repeats what the caller says: nothing to reach"))}
		},
	},
	New: func(registry.Build) (voice.Agent, error) { return New(), nil },
}
