package media

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/pion/rtp"

	"github.com/handset-voice/handset/internal/voice"
)

// maxPacket is the largest datagram read: an Ethernet MTU. The read buffer is one byte
// longer, so a larger datagram shows as too long instead of silently truncated.
const maxPacket = 1500

var (
	errTooLong     = errors.New("media: RTP datagram longer than 1500 bytes")
	errVersion     = errors.New("media: not RTP version 2")
	errPayloadType = errors.New("media: unexpected RTP payload type")
)

// receiver is the reader goroutine's scratch: the datagram buffer and a parsed packet
// whose header slices are reused, so reading allocates nothing per packet. The CSRC and
// extension slices start empty: most peers send neither, and the parser grows them to
// the most a packet of the call has carried, which they keep.
type receiver struct {
	buf    [maxPacket + 1]byte
	packet rtp.Packet
}

func newReceiver() *receiver { return &receiver{} }

// read is Run's loop.
func (s *Session) read(ctx context.Context, sink voice.LegSink) error {
	r := newReceiver()
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(r.buf[:])
		if err != nil {
			return s.readError(ctx, err)
		}
		digit, bad := s.receive(r, r.buf[:n], from)
		if bad != nil {
			sink.Malformed(bad)
		}
		if digit != "" {
			sink.DTMF(digit)
		}
		s.ticker.Poll() // send what is due while this goroutine has the core (see Ticker)
	}
}

// readError is what Run returns when a read failed: the reason the session stopped.
func (s *Session) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.mu.Lock()
	timedOut, closed := s.timedOut, s.closed
	s.mu.Unlock()
	switch {
	case timedOut != nil:
		return timedOut
	case closed || errors.Is(err, net.ErrClosed):
		return nil
	}
	return fmt.Errorf("media: reading RTP: %w", err)
}

// receive takes one datagram through the source check, the parser, the sequence
// tracker and into the jitter buffer or the DTMF receiver. It returns a digit to report
// and an error for a packet from the peer that could not be used; packets from strangers
// are only counted.
func (s *Session) receive(r *receiver, datagram []byte, from netip.AddrPort) (digit string, bad error) {
	from = unmap(from)
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if isRTCP(datagram) {
		return "", nil // reports on the RTP port (rtcp-mux): nothing the call needs
	}
	known := from == s.remote
	if !known && !s.mayLatch(from) {
		s.stats.Strangers++
		return "", nil
	}
	datagram, replayed, err := s.srtp.openPacket(datagram)
	if replayed {
		if known {
			s.stats.Duplicates++
		} else {
			s.stats.Strangers++
		}
		return "", nil
	}
	var payload []byte
	if err == nil {
		payload, err = s.parse(r, datagram)
	}
	if err != nil {
		if !known {
			s.stats.Strangers++ // a stranger's garbage says nothing about the peer
			return "", nil
		}
		s.stats.Malformed++
		return "", err
	}
	if !known || !s.latched && s.latch != LatchStrict {
		if !known {
			s.log.Info("RTP latched to the peer's source address", "sdp", s.sdp, "source", from)
		}
		s.remote, s.latched = from, true
	}
	h := &r.packet.Header
	s.lastIn, s.flowed = now, true
	s.stats.PacketsIn++
	s.stats.BytesIn += uint64(len(payload))
	if s.stats.FirstIn.IsZero() {
		s.stats.FirstIn = now
	}
	verdict := s.seq.update(h.SSRC, h.SequenceNumber)
	switch verdict {
	case seqDuplicate:
		s.stats.Duplicates++
		return "", nil
	case seqReordered:
		s.stats.Reordered++
	case seqRestart:
		s.jitter.restart()
	}
	switch h.PayloadType {
	case s.codec.PayloadType:
		arrival := int64(now.Sub(s.epoch)) * int64(s.codec.wire().clockRate) / int64(time.Second)
		s.jitter.push(h.Timestamp, payload, verdict != seqReordered, arrival)
	case s.dtmfPT:
		digit, err = s.dtmfIn.receive(h.SSRC, h.Timestamp, payload)
		if err != nil {
			s.stats.Malformed++
			return "", err
		}
		if digit != "" {
			s.stats.DTMFIn++
		}
	}
	return digit, nil
}

// isRTCP tells RTCP multiplexed on the RTP port (RFC 5761) from RTP: version 2 and a
// packet type of 192-223 where RTP has its marker bit and payload type.
func isRTCP(datagram []byte) bool {
	return len(datagram) >= 2 && datagram[0]>>6 == 2 && datagram[1] >= 192 && datagram[1] <= 223
}

// mayLatch says whether a packet from an address other than the remote may become the
// remote, if it turns out valid. Caller holds mu.
func (s *Session) mayLatch(from netip.AddrPort) bool {
	if s.latched {
		return false
	}
	switch s.latch {
	case LatchAny:
		return true
	case LatchPeer:
		ip := from.Addr()
		return ip == s.sdp.Addr() || s.peer.IsValid() && ip == s.peer
	}
	return false
}

// parse checks a datagram is RTP the session expects and returns its payload: the
// codec's (whole samples, at most 160 ms), telephone-event, or comfort noise (returned
// empty: it is accepted and ignored). Caller holds mu.
func (s *Session) parse(r *receiver, datagram []byte) ([]byte, error) {
	if len(datagram) > maxPacket {
		return nil, errTooLong
	}
	if err := r.packet.Unmarshal(datagram); err != nil {
		return nil, fmt.Errorf("media: bad RTP packet: %w", err)
	}
	h := &r.packet.Header
	if h.Version != 2 {
		return nil, errVersion
	}
	switch {
	case h.PayloadType == s.codec.PayloadType:
		if err := s.jitter.check(r.packet.Payload); err != nil {
			return nil, err
		}
	case s.dtmfPT != 0 && h.PayloadType == s.dtmfPT:
		if len(r.packet.Payload) < eventBytes {
			return nil, errShortEvent
		}
	case h.PayloadType == comfortNoisePT:
		return r.packet.Payload[:0], nil
	default:
		return nil, errPayloadType
	}
	return r.packet.Payload, nil
}
