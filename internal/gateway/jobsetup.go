package gateway

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/registry"
)

// buildRunner wires the job kinds this node runs from the configuration.
func (s *server) buildRunner() (*jobs.Runner, error) {
	cfg := s.cfg
	allow, err := jobs.ParseAllowList(cfg.Handoff.TransferAllow)
	if err != nil {
		return nil, fmt.Errorf("HANDSET_TRANSFER_ALLOW: %w", err)
	}
	quiet, err := jobs.ParseQuietHours(cfg.Outbound.QuietHours, cfg.Outbound.QuietZone)
	if err != nil {
		return nil, fmt.Errorf("HANDSET_QUIET_HOURS: %w", err)
	}
	transfers := &jobs.Transfers{Calls: s.calls, Allow: allow, Carrier: s.carrier}
	kinds := map[string]jobs.Kind{
		jobs.KindTransfer: {Run: transfers.Run, Limit: 8},
		jobs.KindHandoff: {Run: (&jobs.Handoffs{Store: s.st, Calls: s.calls, Flusher: s,
			URL: cfg.Handoff.URL, Key: cfg.Handoff.Key.Reveal()}).Run, Limit: 8},
	}
	if err := s.canPlace(); err == nil {
		calls := &jobs.Calls{
			Store: s.st, Dialer: s.carrier, PublicURL: cfg.PublicURL, From: cfg.PhoneNumber,
			Agent: s.prov.agent.Name(), HashSecret: s.sec.callerHash,
			RingTimeout: cfg.Outbound.RingTimeout, MaxCall: cfg.Turn.MaxCall,
			OnMachine: carrier.MachinePolicy(cfg.Outbound.Machine), Logger: s.log,
		}
		kinds[jobs.KindCall] = jobs.Kind{Run: calls.Run, Limit: cfg.Outbound.Concurrency,
			Throttle: jobs.CallThrottle{Quiet: quiet, Rate: &jobs.RateLimit{N: cfg.Outbound.Rate, Per: time.Minute}}}
	} else {
		s.log.Info("this node does not place outbound calls", "why", err.Error())
	}
	return jobs.NewRunner(jobs.Options{Store: s.st, Owner: s.node, Kinds: kinds, Lease: cfg.JobLease, Logger: s.log, Metrics: s.metrics})
}

// canPlace says whether this node can place outbound calls, and what is missing if not,
// on one line (it goes into a log line and an API answer).
func (s *server) canPlace() error {
	c, ok := placingCarrier(s.cfg)
	if !ok {
		return errors.New("this binary has no carrier")
	}
	var missing []string
	if s.carrier == nil {
		missing = append(missing, "set "+c.AccountSettings)
	}
	if s.cfg.PhoneNumber == "" {
		missing = append(missing, "set HANDSET_PHONE_NUMBER to the "+c.Title+" number calls come from")
	}
	if s.cfg.PublicURL == "" {
		missing = append(missing, "set HANDSET_PUBLIC_URL: "+c.Title+" fetches an answered call's instructions there")
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.New(strings.Join(missing, "; "))
}

// placingCarrier is the carrier outbound calls go through: the first configured one, or
// when none is, the catalogue's first (whose set-up the messages then describe).
func placingCarrier(cfg *config.Config) (registry.Carrier, bool) {
	all := registry.All[registry.Carrier]()
	for _, c := range all {
		if c.Configured(cfg) {
			return c, true
		}
	}
	if len(all) == 0 {
		return registry.Carrier{}, false
	}
	return all[0], true
}

// channels are the ways people reach this Handset, each saying whether it can reach them
// again later (a callback).
func (s *server) channels() map[string]jobs.Channel {
	ch := map[string]jobs.Channel{
		"browser": jobs.ChannelFunc(func() error { return errors.New("a browser page cannot be called back once it is closed") }),
	}
	for _, c := range registry.All[registry.Carrier]() {
		ch[c.Name] = jobs.ChannelFunc(s.canPlace)
	}
	return ch
}
