package sippeer

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// freePort is a loopback port that is free for both UDP and TCP right now: a peer that
// listens on both binds it next. Another process could take it in between; tests tolerate
// that as rare.
func freePort() (int, error) {
	for range 50 {
		u, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := u.LocalAddr().(*net.UDPAddr).Port
		l, err := net.Listen("tcp4", loopback(port))
		u.Close()
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no loopback port free for both UDP and TCP")
}

// freePorts is n distinct free ports.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		dup := false
		for _, q := range ports {
			// an RTP port p is followed by its RTCP port p+1: keep pairs apart
			dup = dup || q == p || q+1 == p || p+1 == q
		}
		if !dup {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// freePortsWithNext is freePorts whose first port's successor is free for TCP too.
func freePortsWithNext(n int) ([]int, error) {
	for range 50 {
		ports, err := freePorts(n)
		if err != nil {
			return nil, err
		}
		if l, err := net.Listen("tcp4", loopback(ports[0]+1)); err == nil {
			l.Close()
			return ports, nil
		}
	}
	return nil, fmt.Errorf("no loopback port free with the one after it")
}

// loopback is "127.0.0.1:port".
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// bindPoll is how often waitBound tries the port again.
const bindPoll = 10 * time.Millisecond

// waitBound waits until a program started by p has bound port on loopback for network
// ("udp" or "tcp"): until binding it ourselves fails. It sends the program nothing, so a
// caller never reaches a port no one listens on yet (TCP has no retransmission to save
// it). It fails when p exits first or within.
func waitBound(p *process, network string, port int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if p.exited() {
			return fmt.Errorf("%s exited before it bound %s port %d: %v", p.name, network, port, p.err)
		}
		var err error
		if network == "tcp" {
			var l net.Listener
			if l, err = net.Listen("tcp4", loopback(port)); err == nil {
				l.Close()
			}
		} else {
			var c net.PacketConn
			if c, err = net.ListenPacket("udp4", loopback(port)); err == nil {
				c.Close()
			}
		}
		if err != nil {
			return nil // taken: the program has it
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not bind %s port %d within %v", p.name, network, port, within)
		}
		time.Sleep(bindPoll)
	}
}
