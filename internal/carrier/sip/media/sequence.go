package media

// Sequence tracking thresholds (RFC 3550 appendix A.1 uses the same idea): a jump larger
// than these is a new stream, not loss or reordering.
const (
	maxDropout  = 3000 // packets ahead of the highest
	maxMisorder = 100  // packets behind the highest
)

// seqVerdict is what a sequence number says about a packet.
type seqVerdict uint8

const (
	seqNewest    seqVerdict = iota // ahead of every packet so far
	seqReordered                   // behind the highest, not seen before
	seqDuplicate                   // seen before
	seqRestart                     // first packet, new SSRC or a jump: the stream starts over
)

// sequence tracks one peer's RTP sequence numbers across 16-bit wraparound: duplicates,
// reordering, loss and restarts. Every payload type of the stream shares it (telephone-event
// packets are numbered with the audio).
type sequence struct {
	started  bool
	ssrc     uint32
	highest  uint16
	cycles   int64  // wraparounds of highest, times 1<<16
	base     int64  // extended number of the stream's first packet
	seen     uint64 // bit i: highest−i was received
	received int64  // packets in this stream
	lostPrev uint64 // loss counted in earlier streams (before a restart)
}

// update classifies a packet and records it unless it is a duplicate.
func (q *sequence) update(ssrc uint32, seq uint16) seqVerdict {
	if !q.started || ssrc != q.ssrc {
		q.restart(ssrc, seq)
		return seqRestart
	}
	delta := int(int16(seq - q.highest))
	switch {
	case delta == 0:
		return seqDuplicate
	case delta > 0 && delta <= maxDropout:
		if seq < q.highest {
			q.cycles += 1 << 16
		}
		q.highest = seq
		if delta >= 64 {
			q.seen = 1
		} else {
			q.seen = q.seen<<delta | 1
		}
		q.received++
		return seqNewest
	case delta < 0 && -delta <= maxMisorder:
		if -delta < 64 {
			bit := uint64(1) << -delta
			if q.seen&bit != 0 {
				return seqDuplicate
			}
			q.seen |= bit
		} else if q.extended(seq, delta) < q.base {
			return seqDuplicate // older than the stream: a stray from before it began
		}
		q.received++
		return seqReordered
	}
	q.restart(ssrc, seq)
	return seqRestart
}

// extended is seq (delta behind the highest) as a number that does not wrap.
func (q *sequence) extended(seq uint16, delta int) int64 {
	return q.cycles + int64(q.highest) + int64(delta)
}

func (q *sequence) restart(ssrc uint32, seq uint16) {
	q.lostPrev = q.lost()
	*q = sequence{started: true, ssrc: ssrc, highest: seq, base: int64(seq), seen: 1, received: 1, lostPrev: q.lostPrev}
}

// lost is every sequence number expected and never received, over all streams.
func (q *sequence) lost() uint64 {
	if !q.started {
		return q.lostPrev
	}
	expected := q.cycles + int64(q.highest) - q.base + 1
	return q.lostPrev + uint64(max(0, expected-q.received))
}
