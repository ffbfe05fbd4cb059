package sippeer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// Junk is one hostile message: what a scanner or a broken peer might send to a SIP port.
type Junk struct {
	Name   string // what is wrong with it
	Packet []byte
}

// maxReply bounds a reply Exchange reads.
const maxReply = 64 << 10

// MalformedMessages are broken or hostile messages addressed to target ("host:port"):
// truncated headers, a huge header, lying or absurd Content-Length, no Via, binary junk,
// an empty datagram, a stray response, a hostile SDP body and more. A server must survive
// each, answer none with a dialog, and keep serving. Each fits one UDP datagram.
func MalformedMessages(target string) []Junk {
	uri := "sip:handset@" + target
	head := func(method, extra string) string {
		return method + " " + uri + " SIP/2.0\r\n" +
			"Via: SIP/2.0/UDP 192.0.2.7:5060;rport;branch=z9hG4bK-junk\r\n" +
			"From: <sip:scanner@192.0.2.7>;tag=junk\r\nTo: <" + uri + ">\r\n" +
			"Call-ID: junk@192.0.2.7\r\nCSeq: 1 " + method + "\r\nMax-Forwards: 70\r\n" + extra
	}
	junk := func(name, text string) Junk { return Junk{name, []byte(text)} }
	binary := make([]byte, 512)
	for i := range binary {
		binary[i] = byte(i*131 + 7) // every byte value, no SIP in sight
	}
	return []Junk{
		{"an empty datagram", []byte{}},
		{"binary junk", binary},
		junk("CRLF keepalives only", "\r\n\r\n\r\n\r\n"),
		junk("headers cut off mid-line", "INVITE "+uri+" SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.7:5060;bra"),
		junk("no Via", "INVITE "+uri+" SIP/2.0\r\nFrom: <sip:x@192.0.2.7>;tag=1\r\nTo: <"+uri+">\r\nCall-ID: novia\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"),
		junk("Content-Length beyond the body", head("INVITE", "Content-Type: application/sdp\r\nContent-Length: 5000\r\n\r\nv=0\r\n")),
		junk("negative Content-Length", head("INVITE", "Content-Length: -20\r\n\r\n")),
		junk("Content-Length not a number", head("INVITE", "Content-Length: lots\r\n\r\n")),
		junk("Content-Length overflowing 64 bits", head("INVITE", "Content-Length: 99999999999999999999999\r\n\r\n")),
		junk("a 60 KB header", head("OPTIONS", "Subject: "+strings.Repeat("A", 60000)+"\r\nContent-Length: 0\r\n\r\n")),
		junk("1200 Via headers", head("OPTIONS", strings.Repeat("Via: SIP/2.0/UDP 192.0.2.9:5060;branch=z9hG4bK-v\r\n", 1200)+"Content-Length: 0\r\n\r\n")),
		junk("an 8 KB request URI", "INVITE sip:"+strings.Repeat("9", 8192)+"@"+target+" SIP/2.0\r\n\r\n"),
		junk("no request URI", "INVITE  SIP/2.0\r\nContent-Length: 0\r\n\r\n"),
		junk("an unknown SIP version", strings.Replace(head("INVITE", "Content-Length: 0\r\n\r\n"), "SIP/2.0\r\n", "SIP/9.9\r\n", 1)),
		junk("garbage for a request URI", "INVITE <<<%00>>> SIP/2.0\r\n"+head("", "")[len(" "+uri+" SIP/2.0\r\n"):]+"Content-Length: 0\r\n\r\n"),
		junk("a NUL inside a header", head("INVITE", "Subject: a\x00b\r\nContent-Length: 0\r\n\r\n")),
		junk("a CSeq past 2^32", strings.Replace(head("INVITE", "Content-Length: 0\r\n\r\n"), "CSeq: 1 ", "CSeq: 99999999999 ", 1)),
		junk("CSeq naming another method", strings.Replace(head("INVITE", "Content-Length: 0\r\n\r\n"), "CSeq: 1 INVITE", "CSeq: 1 BYE", 1)),
		junk("Max-Forwards zero", strings.Replace(head("INVITE", "Content-Length: 0\r\n\r\n"), "Max-Forwards: 70", "Max-Forwards: 0", 1)),
		junk("bare LF line ends", strings.ReplaceAll(head("OPTIONS", "Content-Length: 0\r\n\r\n"), "\r\n", "\n")),
		junk("invalid UTF-8 in a display name", head("OPTIONS", "Contact: \"\xff\xfe\xc3\" <sip:x@192.0.2.7>\r\nContent-Length: 0\r\n\r\n")),
		junk("a stray response", "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.7:5060;branch=z9hG4bK-stray\r\nFrom: <sip:a@192.0.2.7>;tag=1\r\nTo: <sip:b@192.0.2.7>;tag=2\r\nCall-ID: stray\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"),
		junk("a BYE for no dialog", strings.Replace(head("BYE", "Content-Length: 0\r\n\r\n"), "To: <"+uri+">", "To: <"+uri+">;tag=nothere", 1)),
		hostileSDP(head),
	}
}

// hostileSDP is a well-formed INVITE whose SDP body is not: absurd ports, a payload type
// out of range, a thousand formats, a connection address that is no address.
func hostileSDP(head func(method, extra string) string) Junk {
	body := "v=0\r\no=- 1 1 IN IP4 192.0.2.7\r\ns=-\r\nc=IN IP4 999.1.2.3\r\nt=0 0\r\n" +
		"m=audio 99999 RTP/AVP 0 8 300 " + strings.Repeat("96 ", 1000) + "\r\n" +
		"a=rtpmap:300 PCMU/-8000\r\na=rtpmap:96\r\na=fmtp:101 " + strings.Repeat("0-", 500) + "\r\n" +
		"m=audio 0\r\n"
	return Junk{"hostile SDP in a well-formed INVITE",
		[]byte(head("INVITE", fmt.Sprintf("Content-Type: application/sdp\r\nContent-Length: %d\r\n\r\n%s", len(body), body)))}
}

// Exchange sends packet to target over network ("udp" or "tcp") and returns the first
// reply that arrives within wait (nil when none did; on TCP, what the first read got).
func Exchange(ctx context.Context, network, target string, packet []byte, wait time.Duration) ([]byte, error) {
	if network != "udp" && network != "tcp" {
		return nil, fmt.Errorf("exchange: network %q: want udp or tcp", network)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, target)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline := time.Now().Add(wait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	if _, err := conn.Write(packet); err != nil {
		return nil, fmt.Errorf("exchange: send to %s: %w", target, err)
	}
	buf := make([]byte, maxReply)
	n, err := conn.Read(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("exchange: read from %s: %w", target, err)
	}
	return buf[:n], nil
}
