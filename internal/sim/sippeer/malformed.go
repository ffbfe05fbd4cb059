package sippeer

import (
	"context"
	"time"
)

// Junk is one hostile message: what a scanner or a broken peer might send to a SIP port.
type Junk struct {
	Name   string // what is wrong with it
	Packet []byte
}

// MalformedMessages are hostile messages addressed to target ("host:port"): truncated
// headers, a huge header, lying Content-Length, no Via, binary junk, an empty datagram
// and more. None of them is valid SIP; a server must survive each and answer none with a
// dialog.
func MalformedMessages(target string) []Junk { panic("not yet") }

// Exchange sends packet to target over network ("udp" or "tcp") and returns the first
// reply that arrives within wait (nil when none did).
func Exchange(ctx context.Context, network, target string, packet []byte, wait time.Duration) ([]byte, error) {
	panic("not yet")
}
