package gateway

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
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
	transfers := &jobs.Transfers{Calls: s.calls, Allow: allow, Carriers: s.carriers, NoAccount: accountNeeds}
	kinds := map[string]jobs.Kind{
		jobs.KindTransfer: {Run: transfers.Run, Limit: 8},
		jobs.KindHandoff: {Run: (&jobs.Handoffs{Store: s.st, Calls: s.calls, Flusher: s,
			URL: cfg.Handoff.URL, Key: cfg.Handoff.Key.Reveal()}).Run, Limit: 8},
	}
	if err := s.canPlace(); err == nil {
		calls := &jobs.Calls{
			Store: s.st, Dialer: s.carrier, Dialers: s.carriers, PublicURL: cfg.PublicURL, From: cfg.PhoneNumber,
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
	c, ok := registry.ChosenCarrier(s.cfg)
	if !ok {
		return errors.New("this binary has no carrier")
	}
	return s.canPlaceThrough(c, s.carrier)
}

// canPlaceThrough says whether calls can be placed through carrier c, whose control is
// control (nil: it has no account set), and what is missing if not.
func (s *server) canPlaceThrough(c registry.Carrier, control carrier.Carrier) error {
	var missing []string
	if control == nil {
		missing = append(missing, "set "+c.AccountSettings)
	}
	if s.cfg.PhoneNumber == "" {
		missing = append(missing, "set HANDSET_PHONE_NUMBER to the "+c.Title+" number calls come from")
	}
	if s.cfg.PublicURL == "" && c.Listen == nil { // a carrier with listeners of its own asks nothing of Handset's URL
		missing = append(missing, "set HANDSET_PUBLIC_URL: "+c.Title+" fetches an answered call's instructions there")
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.New(strings.Join(missing, "; "))
}

// accountNeeds says what carrier name needs for an account, for a refused transfer: "set X
// and Y"; "" for a name that is no carrier of this binary.
func accountNeeds(name string) string {
	if c, ok := registry.Find[registry.Carrier](name); ok {
		return "set " + c.AccountSettings
	}
	return ""
}

// channels are the ways people reach this Handset, each saying whether it can reach them
// again later (a callback). A carrier's callers are called back through it when it has an
// account, else through the carrier outbound calls go through.
func (s *server) channels() map[string]jobs.Channel {
	ch := map[string]jobs.Channel{
		"browser": jobs.ChannelFunc(func() error { return errors.New("a browser page cannot be called back once it is closed") }),
	}
	for _, c := range registry.All[registry.Carrier]() {
		if control := s.carriers[c.Name]; control != nil {
			ch[c.Name] = jobs.ChannelFunc(func() error { return s.canPlaceThrough(c, control) })
		} else {
			ch[c.Name] = jobs.ChannelFunc(s.canPlace)
		}
	}
	return ch
}
