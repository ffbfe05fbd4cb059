package sip

import (
	"bytes"
	"net"
	"net/netip"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/voice"
)

// The gate stands before the SIP parser. A public SIP port is probed all day by scanners;
// a source the allow-list does not name costs Handset at most a few 403s a second, one log
// line, and nothing else: past its rate its datagrams are dropped unread.

// gate is the transport's read filter: a message from an allowed source passes; one from
// anyone else passes only within the refusal rate (the handlers then answer it 403), and
// the first from each source is logged.
func (t *Trunk) gate(props sip.TransportReadProps, data []byte) ([]byte, error) {
	src, ok := sourceIP(props.RemoteAddr)
	if ok && (t.opts.Allow.Allowed(src) || t.auth.inCall(src)) {
		return data, nil
	}
	if isResponse(data) {
		return nil, nil // a stranger's response answers nothing Handset sent
	}
	answer, logFirst := t.refuser.Refuse(src, time.Now())
	if logFirst {
		method, agent := requestSummary(data)
		t.log.Warn(t.auth.strangersAre()+" SIP requests from a source "+SettingAllow+" does not name (logged once per source)",
			"source", src.String(), "transport", props.Transport, "method", method, "user_agent", agent)
	}
	if !answer {
		return nil, nil
	}
	return data, nil
}

// allowed reports whether a parsed request's source is one the allow-list names.
func (t *Trunk) allowed(req *sip.Request) bool {
	ap, err := netip.ParseAddrPort(req.Source())
	return err == nil && t.opts.Allow.Allowed(ap.Addr().Unmap())
}

func sourceIP(a net.Addr) (netip.Addr, bool) {
	switch a := a.(type) {
	case *net.UDPAddr:
		ap := a.AddrPort()
		return ap.Addr().Unmap(), true
	case *net.TCPAddr:
		ap := a.AddrPort()
		return ap.Addr().Unmap(), true
	}
	if a == nil {
		return netip.Addr{}, false
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

func isResponse(data []byte) bool { return bytes.HasPrefix(data, []byte("SIP/2.0 ")) }

// requestSummary is a refused request's method and User-Agent, read without the parser,
// clipped for the log.
func requestSummary(data []byte) (method, agent string) {
	line, rest, _ := bytes.Cut(data, []byte("\n"))
	if m, _, ok := bytes.Cut(line, []byte(" ")); ok {
		method = voice.Clip(string(m), 16)
	}
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			break // the body starts
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(bytes.TrimSpace(name), []byte("User-Agent")) {
			return method, voice.Clip(string(bytes.TrimSpace(value)), 60)
		}
	}
	return method, ""
}

// gatedListener closes TCP connections from sources the allow-list does not name as soon
// as they are accepted: a TCP peer cannot spoof its address, so nothing is owed to one the
// trunk does not know, and an idle or trickling connection cannot hold a reader.
type gatedListener struct {
	net.Listener
	trunk     *Trunk
	transport string // tcp, tls: for the log
}

func (l *gatedListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src, ok := sourceIP(conn.RemoteAddr())
		if ok && l.trunk.opts.Allow.Allowed(src) {
			return conn, nil
		}
		if _, logFirst := l.trunk.refuser.Refuse(src, time.Now()); logFirst {
			l.trunk.log.Warn("refused a SIP connection from a source "+SettingAllow+" does not name (logged once per source)",
				"source", src.String(), "transport", l.transport)
		}
		_ = conn.Close()
	}
}
