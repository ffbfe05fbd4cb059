package media

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/pion/rtp"

	"github.com/handset-voice/handset/internal/audio"
)

// The shape of one sent RFC 4733 event, in 20 ms ticks.
const (
	eventUpdates = 5 // 100 ms of tone: long enough for every detector
	eventEnds    = 3 // the end packet, twice repeated in case one is lost
	eventGap     = 2 // ticks of audio between two events, so they read as two key presses
)

// rtpHeaderBytes is a header without CSRCs or extensions, all the session sends.
const rtpHeaderBytes = 12

// maxFrameBytes is the largest 20 ms frame a valid codec has (48 kHz PCM16).
const maxFrameBytes = 48000 / 50 * 2

// sender is the send side's state: the RTP numbering and what the next packet carries.
// The session's mu guards it; only the session's beat builds packets.
type sender struct {
	ssrc         uint32
	seq          uint16
	ts           uint32
	frameSamples uint32
	frameBytes   int
	marker       bool // the next packet sent starts a talkspurt
	talking      bool // the last frame carried queued audio
	hdr          rtp.Header
	frame        []byte // one frame of payload, within packet
	packet       []byte // header and payload, written to the socket

	digits      [maxDigits]uint8
	digitHead   int
	digitCount  int
	event       outEvent
	eventBuffer [eventBytes]byte
}

// outEvent is the telephone event being sent.
type outEvent struct {
	active        bool
	code          uint8
	ts            uint32 // every packet of the event carries its start timestamp
	updates, ends int
	gap           int
	finished      bool // the last end packet was just built: count the digit
}

// init numbers a new stream at random (RFC 3550: SSRC, sequence and timestamp start
// unpredictable) on the first call and sizes frames for c; numbering continues across
// codec changes. The packet buffer fits c's frame, not the largest codec's: a G.711
// call's is 172 bytes where 48 kHz PCM would need 1,932, and a call keeps it all along.
// A re-INVITE to a codec with larger frames replaces it.
func (o *sender) init(c Codec) {
	if o.packet == nil {
		o.ssrc = rand.Uint32()
		o.seq = uint16(rand.Uint32())
		o.ts = rand.Uint32()
		o.marker = true // the stream's first packet
		o.hdr = rtp.Header{Version: 2, SSRC: o.ssrc}
	}
	o.frameSamples = uint32(c.wire().frameUnits())
	o.frameBytes = c.wire().frameBytes()
	if size := rtpHeaderBytes + max(o.frameBytes, eventBytes); len(o.packet) < size {
		o.packet = make([]byte, size)
	}
	o.frame = o.packet[rtpHeaderBytes : rtpHeaderBytes+o.frameBytes]
	o.talking = false
}

func (o *sender) queueDigit(code uint8) bool {
	if o.digitCount == maxDigits {
		return false
	}
	o.digits[(o.digitHead+o.digitCount)%maxDigits] = code
	o.digitCount++
	return true
}

// eventDue reports whether this tick carries a telephone event, starting the next
// queued digit when the gap after the last one has passed.
func (o *sender) eventDue(ts uint32) bool {
	e := &o.event
	if e.active {
		return true
	}
	if e.gap > 0 {
		e.gap--
		return false
	}
	if o.digitCount == 0 {
		return false
	}
	*e = outEvent{active: true, code: o.digits[o.digitHead], ts: ts}
	o.digitHead = (o.digitHead + 1) % maxDigits
	o.digitCount--
	o.talking = false // the audio after the event starts a new talkspurt
	return true
}

// eventPayload is this tick's packet of the active event: updates with a growing
// duration, then the end packets with the final one.
func (o *sender) eventPayload() (payload []byte, marker bool) {
	e := &o.event
	ev := event{code: e.code, volume: 10}
	if e.updates < eventUpdates {
		e.updates++
		ev.duration = uint16(uint32(e.updates) * o.frameSamples)
		marker = e.updates == 1
	} else {
		e.ends++
		ev.duration, ev.end = uint16(uint32(eventUpdates)*o.frameSamples), true
		if e.ends == eventEnds {
			e.active, e.gap, e.finished = false, eventGap, true
		}
	}
	encodeEvent(o.eventBuffer[:], ev)
	return o.eventBuffer[:], marker
}

// tick does what the send clock's tick owes the session: n packets (the first due at
// due, the rest a frame apart), and a frame of the jitter buffer played out to the sink
// for each, with the marks now due. Its Ticker's beat calls it; false means the session
// is closed and leaves the beat.
func (s *Session) tick(now time.Time, n int, due time.Time) bool {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return false
	}
	for range n {
		s.mu.Lock()
		underruns := s.queue.underruns
		pkt, to, send := s.nextPacket()
		dry := s.queue.underruns != underruns
		s.mu.Unlock()
		if send {
			_, err := s.conn.WriteToUDPAddrPort(pkt, to)
			sent := s.clk.Now()
			s.mu.Lock()
			if err == nil {
				s.stats.PacketsOut++
				s.stats.BytesOut += uint64(len(pkt) - rtpHeaderBytes - s.srtp.overhead())
				if s.stats.FirstOut.IsZero() {
					s.stats.FirstOut = sent
				}
			}
			s.stats.Lateness.add(sent.Sub(due))
			observe := s.onSent
			s.mu.Unlock()
			if observe != nil {
				observe(sent.Sub(due), dry)
			}
		}
		due = due.Add(audio.FrameDuration)
	}
	s.playOut(now, min(n, maxCatchUp))
	return true
}

// nextPacket builds the packet for one tick and says where to send it; send is false on
// hold or with no address to send to. Caller holds mu.
func (s *Session) nextPacket() (pkt []byte, to netip.AddrPort, send bool) {
	o := &s.out
	ts := o.ts
	o.ts += o.frameSamples
	pt, payload, marker := s.codec.PayloadType, o.frame, false
	if s.dtmfPT != 0 && o.eventDue(ts) {
		pt = s.dtmfPT
		payload, marker = o.eventPayload()
		ts = o.event.ts
		if o.event.finished {
			o.event.finished = false
			s.stats.DTMFOut++
		}
	} else {
		took := s.takeFrame(o.frame)
		if took && !o.talking {
			o.marker = true
		}
		o.talking = took
	}
	if s.held || !sendable(s.remote) {
		return nil, netip.AddrPort{}, false
	}
	o.hdr.Marker = marker || o.marker
	o.marker = false
	o.hdr.PayloadType = pt
	o.hdr.SequenceNumber = o.seq
	o.hdr.Timestamp = ts
	o.seq++
	if _, err := o.hdr.MarshalTo(o.packet[:rtpHeaderBytes]); err != nil {
		panic(fmt.Sprintf("media: an RTP header without CSRCs or extensions did not fit 12 bytes: %v", err))
	}
	if &payload[0] != &o.packet[rtpHeaderBytes] {
		copy(o.packet[rtpHeaderBytes:], payload)
	}
	pkt = o.packet[:rtpHeaderBytes+len(payload)]
	if s.srtp != nil {
		var err error
		if pkt, err = s.srtp.seal(pkt); err != nil {
			if s.srtp.failures++; s.srtp.failures == 1 { // once a call, not 50 times a second
				s.log.Error("RTP packets not sent: SRTP sealing failed (logged once a call)", "err", err)
			}
			return nil, netip.AddrPort{}, false
		}
	}
	return pkt, s.remote, true
}

// sendable is an address RTP can go to: not the unspecified address of an old-style hold.
func sendable(a netip.AddrPort) bool {
	return a.Addr().IsValid() && !a.Addr().IsUnspecified() && a.Port() != 0
}

// playOut hands frames frames of the jitter buffer to the sink with the marks now due,
// and ends Run when the peer has been silent too long.
func (s *Session) playOut(now time.Time, frames int) {
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	s.mu.Lock()
	// Before the peer's first packet the call is handed silence: its clock (the VAD, the
	// echo path's timeline) runs on the frames it gets, from the answer on, as a carrier's
	// media stream runs from its start.
	for played := range frames {
		s.popFrame(s.playoutFrame(played))
	}
	played := frames
	var marks []string
	if s.sink != nil {
		marks = s.queue.due() // held back until a sink can take them
	}
	s.checkTimeout(now)
	s.mu.Unlock()
	if s.sink == nil {
		return
	}
	for i := range played {
		s.sink.Audio(s.playout[i])
	}
	s.markDue(s.sink, marks)
}

// checkTimeout ends Run when no RTP came for too long. Caller holds mu.
func (s *Session) checkTimeout(now time.Time) {
	if s.held || s.timedOut != nil {
		return
	}
	limit, what := s.firstTimeout, "since the call started"
	if s.flowed {
		limit, what = s.timeout, "since the last packet"
	}
	if silent := now.Sub(s.lastIn); silent > limit {
		s.timedOut = fmt.Errorf("%w for %s %s", ErrMediaTimeout, silent.Round(time.Millisecond), what)
		_ = s.conn.SetReadDeadline(time.Now()) // wake the reader: Run returns the timeout
	}
}
