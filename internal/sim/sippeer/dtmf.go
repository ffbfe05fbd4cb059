package sippeer

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pion/rtp"
)

// RFC 4733 telephone events as UACDTMF sends them.
const (
	// DTMFPayloadType is the telephone-event payload type the scenarios offer.
	DTMFPayloadType = 101
	dtmfVolume      = 10 // -10 dBm0
	dtmfPackets     = 5  // updates per digit: 100 ms of tone in 20 ms steps
	dtmfEndCopies   = 3  // the end packet is sent three times, as RFC 4733 advises
	dtmfGapPackets  = 5  // 100 ms of silence between digits (audio packets)
	leadPackets     = 25 // 500 ms of audio before the first digit
	samplesPer20ms  = 160
	mulawSilence    = 0xff
)

// dtmfEvents maps a digit to its RFC 4733 event code.
const dtmfEvents = "0123456789*#ABCD"

// splitDigits checks digits and splits them one per string.
func splitDigits(digits string) ([]string, error) {
	out := make([]string, 0, len(digits))
	for _, d := range digits {
		if !strings.ContainsRune(dtmfEvents, d) {
			return nil, fmt.Errorf("DTMF digit %q: want one of %s", d, dtmfEvents)
		}
		out = append(out, string(d))
	}
	return out, nil
}

// dtmfRTP is the RTP stream UACDTMF plays: half a second of mu-law silence (payload type
// 0), then each digit as telephone events separated by silence, all one SSRC and one
// sequence, a packet every 20 ms. It returns the packets and how long they play.
func dtmfRTP(digits string) ([][]byte, time.Duration, error) {
	if _, err := splitDigits(digits); err != nil {
		return nil, 0, err
	}
	var (
		packets [][]byte
		seq     uint16 = 1000
		ts      uint32 = 8000
		silence        = make([]byte, samplesPer20ms)
	)
	for i := range silence {
		silence[i] = mulawSilence
	}
	add := func(h rtp.Header, payload []byte) error {
		h.Version, h.SequenceNumber, h.SSRC = 2, seq, 0x51ee9000
		b, err := (&rtp.Packet{Header: h, Payload: payload}).Marshal()
		packets = append(packets, b)
		seq++
		return err
	}
	audio := func(n int) error {
		for range n {
			if err := add(rtp.Header{PayloadType: 0, Timestamp: ts}, silence); err != nil {
				return err
			}
			ts += samplesPer20ms
		}
		return nil
	}
	if err := audio(leadPackets); err != nil {
		return nil, 0, err
	}
	for _, d := range digits {
		event := byte(strings.IndexRune(dtmfEvents, d))
		for i := 1; i <= dtmfPackets+dtmfEndCopies; i++ {
			n := min(i, dtmfPackets)
			payload := []byte{event, dtmfVolume, 0, 0}
			if i > dtmfPackets {
				payload[1] |= 0x80 // E: the event has ended
			}
			binary.BigEndian.PutUint16(payload[2:], uint16(n*samplesPer20ms))
			if err := add(rtp.Header{PayloadType: DTMFPayloadType, Marker: i == 1, Timestamp: ts}, payload); err != nil {
				return nil, 0, err
			}
		}
		ts += dtmfPackets * samplesPer20ms
		if err := audio(dtmfGapPackets); err != nil {
			return nil, 0, err
		}
	}
	return packets, time.Duration(len(packets)) * 20 * time.Millisecond, nil
}

// writeDTMFPcap writes dtmfRTP(digits) as a capture sipp's play_pcap_audio replays and
// returns how long it plays, in milliseconds.
func writeDTMFPcap(path, digits string) (string, int, error) {
	packets, d, err := dtmfRTP(digits)
	if err != nil {
		return "", 0, err
	}
	if err := os.WriteFile(path, pcapOf(packets, 20*time.Millisecond), 0o644); err != nil {
		return "", 0, err
	}
	return path, int(d.Milliseconds()), nil
}
