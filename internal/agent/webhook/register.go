package webhook

import (
	"context"
	"fmt"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Provider is the user's own HTTP endpoint as an agent runtime (HANDSET_AGENT=webhook). It
// has no default address: HANDSET_AGENT_URL is required.
var Provider = registry.Agent{
	About: registry.About{
		Name:     Name,
		Title:    "your webhook",
		Settings: []string{"HANDSET_AGENT_URL", "HANDSET_AGENT_KEY", "HANDSET_AGENT_TIMEOUT"},
		Hints: registry.Hints{
			KeyVar:   "HANDSET_AGENT_KEY",
			URLVar:   "HANDSET_AGENT_URL",
			KeyFix:   "Set HANDSET_AGENT_KEY to the bearer token your webhook expects.",
			ModelFix: "Your webhook refused Handset's request: compare what it expects with the webhook format in docs/runtimes.md.",
			SlowFix:  "Your webhook is slow to send its first text: stream the reply as it is written." + registry.LongTurnFiller,
			TestFix:  registry.Fixed("check that HANDSET_AGENT_URL answers a POST with text, JSON or an SSE stream (docs/runtimes.md)"),
		},
		Checks: func(p registry.Probe) []doctor.Check {
			return []doctor.Check{doctor.Net(p.Section, "webhook", func(ctx context.Context) doctor.Result { return reachable(ctx, p) })}
		},
	},
	New: func(b registry.Build) (voice.Agent, error) {
		s := b.Settings
		return New(Options{
			URL:        s.Value("HANDSET_AGENT_URL"),
			Key:        s.Value("HANDSET_AGENT_KEY"),
			Timeout:    s.Duration("HANDSET_AGENT_TIMEOUT"),
			HTTPClient: b.HTTP,
			Logger:     b.Log,
		})
	},
}

// reachable checks that the webhook's server answers, without POSTing a turn.
func reachable(ctx context.Context, p registry.Probe) doctor.Result {
	u := p.Settings.Value("HANDSET_AGENT_URL")
	a, err := doctor.Get(ctx, p.HTTP(u), u, nil)
	switch {
	case err != nil:
		return doctor.FailResult("no answer from "+u+": "+netfail.Describe(err), "start your webhook server, or correct HANDSET_AGENT_URL")
	case a.Status >= 500:
		return doctor.WarnResult(fmt.Sprintf("%s answers HTTP %d to a GET", u, a.Status), "check the webhook server's logs; turns are POSTed (handset test sends one)")
	}
	return doctor.OKResult(fmt.Sprintf("%s answers (HTTP %d to a GET; turns are POSTed, which doctor does not do)", u, a.Status))
}
