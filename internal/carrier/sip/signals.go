package sip

import (
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// signals are one call's signalling events for its journal (voice.Reporting): the INVITE
// arrives before the call and its journal exist, so events wait here until the gateway
// says where they go, then go there with the times they happened.
type signals struct {
	mu      sync.Mutex
	report  func(voice.LegEvent)
	pending []voice.LegEvent
}

// maxPending bounds what waits: a call's setup is a handful of messages.
const maxPending = 16

// signal notes a signalling message: name as on the wire, in or out, and why (a BYE's or
// a failure's cause; empty otherwise).
func (s *signals) signal(at time.Time, name, direction, reason string) {
	s.note(voice.LegEvent{At: at, Kind: voice.LegSignal, Name: name, Direction: direction, Reason: reason})
}

func (s *signals) note(e voice.LegEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.report != nil {
		s.report(e)
		return
	}
	if len(s.pending) < maxPending {
		s.pending = append(s.pending, e)
	}
}

// reportTo reports what waited, then everything later, to report.
func (s *signals) reportTo(report func(voice.LegEvent)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.pending {
		report(e)
	}
	s.pending, s.report = nil, report
}
