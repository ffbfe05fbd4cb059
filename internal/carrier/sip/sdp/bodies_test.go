package sdp

import "strings"

// Offers in the shapes real SIP software sends, written for these tests. crlf turns the
// readable "\n" lines into the CRLF lines SIP carries.
func crlf(s string) []byte {
	return []byte(strings.ReplaceAll(strings.TrimPrefix(s, "\n"), "\n", "\r\n"))
}

// session writes a body with a plain session part (192.0.2.1) around media lines.
func session(media string) []byte {
	return crlf("v=0\no=- 1 1 IN IP4 192.0.2.1\ns=-\nc=IN IP4 192.0.2.1\nt=0 0\n" + strings.TrimPrefix(media, "\n"))
}

// A PBX offering its usual list: GSM it has and Handset has not, G.722 last.
var asteriskOffer = crlf(`
v=0
o=- 1713456789 1713456789 IN IP4 10.0.0.10
s=Asterisk
c=IN IP4 10.0.0.10
t=0 0
m=audio 10056 RTP/AVP 0 8 3 9 101
a=rtpmap:0 PCMU/8000
a=rtpmap:8 PCMA/8000
a=rtpmap:3 GSM/8000
a=rtpmap:9 G722/8000
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-16
a=ptime:20
a=maxptime:150
a=sendrecv
`)

// A softswitch leading with opus and G.722, with comfort noise and an explicit RTCP port.
var freeswitchOffer = crlf(`
v=0
o=FreeSWITCH 1713440000 1713440001 IN IP4 198.51.100.20
s=FreeSWITCH
c=IN IP4 198.51.100.20
t=0 0
m=audio 24602 RTP/AVP 102 9 0 8 101 13
a=rtpmap:102 opus/48000/2
a=fmtp:102 useinbandfec=1; maxaveragebitrate=30000; maxplaybackrate=48000; ptime=20; minptime=10; maxptime=40
a=rtpmap:9 G722/8000
a=rtpmap:0 PCMU/8000
a=rtpmap:8 PCMA/8000
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-16
a=rtpmap:13 CN/8000
a=ptime:20
a=rtcp:24603 IN IP4 198.51.100.20
a=sendrecv
`)

// A desktop user agent over IPv6 with a bandwidth line, two telephone-event clocks (the
// 48 kHz one for opus listed first), rtcp-mux and SSRC attributes, and bare LF lines.
var baresipOffer = []byte(strings.TrimPrefix(`
v=0
o=- 1094125376 3185627140 IN IP6 2001:db8::20
s=-
c=IN IP6 2001:db8::20
b=AS:128
t=0 0
m=audio 10200 RTP/AVP 96 9 0 8 101 102
b=TIAS:64000
a=rtpmap:96 opus/48000/2
a=fmtp:96 stereo=1;sprop-stereo=1
a=rtpmap:9 G722/8000
a=rtpmap:0 PCMU/8000
a=rtpmap:8 PCMA/8000
a=rtpmap:101 telephone-event/48000
a=rtpmap:102 telephone-event/8000
a=fmtp:101 0-15
a=fmtp:102 0-15
a=ptime:20
a=rtcp-mux
a=ssrc:2712345678 cname:b6a1f2c0
a=sendrecv
a=label:1
`, "\n"))

// A test tool's minimal offer: one codec, no rtpmap for its static type, no direction,
// and no final line break.
var sippOffer = []byte("v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\n" +
	"c=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 6000 RTP/AVP 0")

// A carrier trunk leading with G.729, asking for 30 ms packets, with ICE attributes and a
// media-level address that overrides the session's.
var trunkOffer = crlf(`
v=0
o=- 3829201 3829201 IN IP4 192.76.120.10
s=Trunk
c=IN IP4 192.76.120.1
t=0 0
m=audio 30000 RTP/AVP 18 0 8 101
c=IN IP4 192.76.120.10
a=rtpmap:18 G729/8000
a=fmtp:18 annexb=no
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-16
a=ptime:30
a=ice-ufrag:Xp3b
a=ice-pwd:u7H2k9d0QmZ1xR4tLw8vYe
a=candidate:1 1 UDP 2130706431 192.76.120.10 30000 typ host
a=sendrecv
`)

// Video first, then audio, then a fax stream pion would not read: the answer keeps all
// three lines in order.
var multiStreamOffer = crlf(`
v=0
o=pbx 42 42 IN IP4 203.0.113.40
s=call
c=IN IP4 203.0.113.40
t=0 0
m=video 9000 RTP/AVP 96
a=rtpmap:96 H264/90000
m=audio 9002 RTP/AVP 8 0
a=sendrecv
m=image 9004 udptl t38
a=T38FaxVersion:0
`)

// A secure offer: two usable keys and one of a suite Handset does not run.
var savpOffer = crlf(`
v=0
o=- 8 9 IN IP4 198.51.100.7
s=-
c=IN IP4 198.51.100.7
t=0 0
m=audio 12000 RTP/SAVP 0 101
a=rtpmap:0 PCMU/8000
a=rtpmap:101 telephone-event/8000
a=crypto:1 AES_256_CM_HMAC_SHA1_80 inline:AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLg==
a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:KCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4/QEFCQ0RF|2^31
a=crypto:3 AES_CM_128_HMAC_SHA1_32 inline:ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CB
a=sendrecv
`)

// An old-style hold: the session address set to 0.0.0.0, no direction.
var oldHoldOffer = crlf(`
v=0
o=- 5 6 IN IP4 10.1.1.1
s=-
c=IN IP4 0.0.0.0
t=0 0
m=audio 7078 RTP/AVP 0
`)
