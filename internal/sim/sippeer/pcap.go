package sippeer

import (
	"encoding/binary"
	"time"
)

// pcapOf is a classic pcap capture (Ethernet link type) of payloads as UDP datagrams
// from 127.0.0.1:10000 to 127.0.0.1:20000, one every step. Sipp's play_pcap_audio
// replays the UDP payloads with the capture's timing to the call's media address; the
// addresses in the capture are not used.
func pcapOf(payloads [][]byte, step time.Duration) []byte {
	out := binary.LittleEndian.AppendUint32(nil, 0xa1b2c3d4) // magic, microsecond stamps
	out = binary.LittleEndian.AppendUint16(out, 2)           // version 2.4
	out = binary.LittleEndian.AppendUint16(out, 4)
	out = binary.LittleEndian.AppendUint32(out, 0)     // time zone
	out = binary.LittleEndian.AppendUint32(out, 0)     // accuracy
	out = binary.LittleEndian.AppendUint32(out, 65535) // snap length
	out = binary.LittleEndian.AppendUint32(out, 1)     // Ethernet
	for i, p := range payloads {
		frame := udpFrame(p)
		at := time.Duration(i) * step
		out = binary.LittleEndian.AppendUint32(out, uint32(at/time.Second))
		out = binary.LittleEndian.AppendUint32(out, uint32(at%time.Second/time.Microsecond))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(frame)))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(frame)))
		out = append(out, frame...)
	}
	return out
}

// udpFrame wraps payload in Ethernet, IPv4 and UDP headers.
func udpFrame(payload []byte) []byte {
	const ethLen, ipLen, udpLen = 14, 20, 8
	f := make([]byte, ethLen+ipLen+udpLen, ethLen+ipLen+udpLen+len(payload))
	binary.BigEndian.PutUint16(f[12:], 0x0800) // IPv4; MAC addresses stay zero
	ip := f[ethLen : ethLen+ipLen]
	ip[0] = 0x45 // version 4, 20-byte header
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen+udpLen+len(payload)))
	ip[8], ip[9] = 64, 17 // TTL, UDP
	copy(ip[12:], []byte{127, 0, 0, 1, 127, 0, 0, 1})
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	udp := f[ethLen+ipLen:]
	binary.BigEndian.PutUint16(udp[0:], 10000)
	binary.BigEndian.PutUint16(udp[2:], 20000)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen+len(payload))) // checksum 0: none
	return append(f, payload...)
}

// ipChecksum is the IPv4 header checksum of h (whose checksum field is zero).
func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = (sum >> 16) + (sum & 0xffff)
	}
	return ^uint16(sum)
}
