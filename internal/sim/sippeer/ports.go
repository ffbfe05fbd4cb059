package sippeer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// freePort is a loopback port that is free for both UDP and TCP right now: a peer that
// listens on both binds it next. Another process could take it in between (any outgoing
// connection on the machine may be given it); onFreePorts starts the peer again then.
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

// Media ports for peers that bind theirs late: baresip opens its RTP socket only when a
// call starts, seconds after its ports were chosen. A port from the kernel's ephemeral
// range (32768-60999 on Linux) may be taken in between by any socket on the machine, and
// the tests' Handsets take RTP ports from 31000-34999 and 10000-20000; this range is
// below the first and between the others.
const (
	mediaLow  = 24000
	mediaHigh = 30000
)

// freeMediaPort is an even port of the media range free for UDP right now, with the port
// after it (RTCP), chosen at random so that peers started at once rarely meet.
func freeMediaPort() (int, error) {
	for range 100 {
		port := mediaLow + 2*rand.IntN((mediaHigh-mediaLow)/2)
		rtp, err := net.ListenPacket("udp4", loopback(port))
		if err != nil {
			continue
		}
		rtcp, err := net.ListenPacket("udp4", loopback(port+1))
		rtp.Close()
		if err != nil {
			continue
		}
		rtcp.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no media port pair free in %d-%d", mediaLow, mediaHigh)
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

// bindPoll is how often waitBound looks again.
const bindPoll = 10 * time.Millisecond

// waitBound waits until the program started by p holds a socket bound to port on loopback
// for network ("udp", or "tcp" listening). It sends the program nothing, so a caller never
// reaches a port no one listens on yet (TCP has no retransmission to save it). It looks in
// /proc rather than trying the port itself: a port some other process took first would
// look bound too. It fails when p exits first or within.
func waitBound(p *process, network string, port int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if p.exited() {
			return fmt.Errorf("%s exited before it bound %s port %d: %v", p.name, network, port, p.err)
		}
		held, err := holdsPort(p.cmd.Process.Pid, network, port)
		if err != nil {
			return err
		}
		if held {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not bind %s port %d within %v", p.name, network, port, within)
		}
		time.Sleep(bindPoll)
	}
}

// holdsPort reports whether process pid has a socket bound to 127.0.0.1:port for network
// ("udp", or "tcp" in the listening state): a socket inode from /proc/net/<network> that
// is among the process's open files.
func holdsPort(pid int, network string, port int) (bool, error) {
	table, err := os.ReadFile("/proc/net/" + network)
	if err != nil {
		return false, err
	}
	local := fmt.Sprintf("0100007F:%04X", port)
	var inodes []string
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		// sl, local_address, rem_address, st, queues, timer, retransmits, uid, timeout, inode
		if len(f) < 10 || f[1] != local || (network == "tcp" && f[3] != tcpListen) {
			continue
		}
		inodes = append(inodes, "socket:["+f[9]+"]")
	}
	if len(inodes) == 0 {
		return false, nil
	}
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fds)
	if err != nil {
		return false, nil // exiting: the caller sees it next
	}
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && slices.Contains(inodes, target) {
			return true, nil
		}
	}
	return false, nil
}

// tcpListen is TCP_LISTEN as /proc/net/tcp writes a socket's state.
const tcpListen = "0A"

// portAttempts is how many times onFreePorts starts a peer on newly chosen ports.
const portAttempts = 5

// errPortTaken marks a start that failed because another process bound one of the peer's
// ports between freePort and the peer's own bind.
var errPortTaken = errors.New("a port chosen for it was taken by another process")

// portTaken is err marked with errPortTaken when the peer's output says a bind failed.
// sipp, baresip and kamailio all print the C library's text for EADDRINUSE.
func portTaken(err error, output string) error {
	if err != nil && strings.Contains(output, "Address already in use") {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}

// onFreePorts calls start, which chooses its own free ports, until it succeeds or fails
// for a reason other than errPortTaken, at most portAttempts times. A failed start must
// have ended its process.
func onFreePorts[T any](start func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := start()
		if err == nil || !errors.Is(err, errPortTaken) || attempt == portAttempts {
			return v, err
		}
	}
}
