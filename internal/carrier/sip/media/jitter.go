package media

import (
	"errors"
	"sync"
	"time"
)

// Jitter buffer limits, in 20 ms frames.
const (
	minDepth       = 1  // the cushion never goes below one frame
	maxDepth       = 5  // nor above 100 ms: a longer wait hurts the conversation more than loss
	jitterSlots    = 16 // frames held ahead of the playhead (320 ms); beyond is a jump
	adaptEvery     = 50 // pops (1 s) between decisions to shrink or grow toward the target
	maxPacketSlots = jitterSlots / 2
)

var (
	errEmptyPayload = errors.New("media: RTP packet without payload")
	errOddPayload   = errors.New("media: RTP payload is not whole samples")
	errLongPayload  = errors.New("media: RTP payload longer than 160 ms")
)

// pushResult is what the jitter buffer did with a packet.
type pushResult uint8

const (
	pushStored    pushResult = iota
	pushLate                 // its time to play had passed: dropped
	pushRestarted            // a timestamp jump: a new stream follows what was buffered
)

// jitterBuffer turns the peer's audio packets, in whatever order and size they arrive,
// into one 20 ms frame per pop. Samples are placed by RTP timestamp, so packets of any
// ptime (10, 30, 60 ms) are re-cut into 20 ms frames, and reordering needs no sorting.
//
// The playhead is the timestamp of the next frame to pop; it advances one frame per pop.
// Missing audio is played as silence (not repeated: a repeated fragment of speech is
// heard by the call's voice detector as more speech). The cushion between arrivals and
// the playhead, depth, starts at one frame and adapts from minDepth to maxDepth frames:
// a packet that arrives after its time grows it at once by holding the playhead one pop;
// once a second it moves toward a target of three times the RFC 3550 jitter estimate,
// shrinking by skipping one frame only when every pop of the last second had at least a
// frame more buffered than the target needs.
//
// Not safe for concurrent use; the session guards it.
type jitterBuffer struct {
	frameSamples int64 // RTP timestamp units (samples) per 20 ms frame
	frameBytes   int
	sampleBytes  int
	silence      byte

	slots  [jitterSlots]jitterSlot
	frames *sync.Pool // where slots take their frames from and give them back to

	started    bool
	rebaseNext bool  // the next packet starts a new stream (new SSRC, sequence jump)
	anchor     int64 // playhead at the start: slots count frames from it
	firstAudio int64 // the stream's first packet: frames before it are the cushion
	playhead   int64 // extended timestamp of the next frame to pop
	highestEnd int64 // end of the newest audio received
	refTS      uint32
	refExt     int64 // extended value of refTS

	depth    int
	hold     int   // pops left that play silence without advancing (growing the cushion)
	minAhead int64 // least audio buffered after a pop in this adaptation window
	pops     int

	jitter      float64 // RFC 3550 estimate, in samples
	lastTransit int64
	haveTransit bool

	late, concealed, restarts uint64

	heard       bool  // the last pop carried received audio (for a decoder: see g722.go)
	streamStart int64 // where the current stream's audio starts (begin, rebase)
}

func newJitterBuffer(c Codec) *jitterBuffer {
	b := &jitterBuffer{}
	b.configure(c)
	return b
}

// jitterSlot is one 20 ms frame of the window ahead of the playhead. It holds a frame only
// while audio for it is buffered: with packets in order, that is the cushion's few frames,
// not all 16, so a call holds some hundreds of bytes of audio instead of 2.5 KB.
type jitterSlot struct {
	ts    int64   // frame start of the audio the slot holds; -1: none
	frame *[]byte // from the buffer's pool while ts is set
}

// configure sizes the buffer for c and empties it.
func (b *jitterBuffer) configure(c Codec) {
	w := c.wire()
	b.empty() // frames of the old size go back to their pool
	b.frameSamples = int64(w.frameUnits())
	b.sampleBytes = w.unitBytes
	b.frameBytes = w.frameBytes()
	b.silence = w.filler
	b.frames = jitterFrames(b.frameBytes)
	b.depth = minDepth
}

// jitterFramePools are the pools of jitter buffer frames by size, shared by every call.
var (
	jitterFramePoolsMu sync.Mutex
	jitterFramePools   = map[int]*sync.Pool{}
)

func jitterFrames(size int) *sync.Pool {
	jitterFramePoolsMu.Lock()
	defer jitterFramePoolsMu.Unlock()
	p := jitterFramePools[size]
	if p == nil {
		p = &sync.Pool{New: func() any { f := make([]byte, size); return &f }}
		jitterFramePools[size] = p
	}
	return p
}

// free empties slot i, giving its frame back.
func (b *jitterBuffer) free(i int) {
	s := &b.slots[i]
	if s.frame != nil {
		b.frames.Put(s.frame)
	}
	*s = jitterSlot{ts: -1}
}

// empty forgets every packet; the next push starts the stream again.
func (b *jitterBuffer) empty() {
	for i := range b.slots {
		b.free(i)
	}
	b.started, b.rebaseNext, b.hold, b.haveTransit = false, false, 0, false
	b.minAhead, b.pops = 1<<62, 0
}

// check refuses a payload that is not whole samples or could not fit the buffer.
func (b *jitterBuffer) check(payload []byte) error {
	switch {
	case len(payload) == 0:
		return errEmptyPayload
	case len(payload)%b.sampleBytes != 0:
		return errOddPayload
	case len(payload) > maxPacketSlots*b.frameBytes:
		return errLongPayload
	}
	return nil
}

// push stores one checked audio payload. newest says the packet's sequence number is the
// highest so far (a newest packet whose timestamp is far off is a jump; an older one is
// just late). arrival is the receive time in timestamp units, for the jitter estimate.
func (b *jitterBuffer) push(ts uint32, payload []byte, newest bool, arrival int64) pushResult {
	switch {
	case !b.started:
		b.begin(ts)
	case b.rebaseNext:
		b.rebase(ts)
	}
	ext := b.refExt + int64(int32(ts-b.refTS))
	end := ext + int64(len(payload)/b.sampleBytes)
	window := b.playhead + jitterSlots*b.frameSamples
	result := pushStored
	switch {
	case newest && (end <= b.playhead-maxDepth*b.frameSamples || end > window),
		!newest && end > window:
		if !newest {
			b.late++ // an old sequence number with a far timestamp: a stray, not a jump
			return pushLate
		}
		b.rebase(ts)
		ext, end, result = b.refExt, b.refExt+int64(len(payload)/b.sampleBytes), pushRestarted
		if end > window {
			// What is buffered already reaches the window's end: the playout is too far
			// behind the peer to keep it. Placed after it, this packet would be beyond
			// the window again, and so would every one after it.
			b.begin(ts)
			ext, end = b.refExt, b.refExt+int64(len(payload)/b.sampleBytes)
		}
	case end <= b.playhead:
		b.late++
		if b.depth < maxDepth {
			b.depth++
			b.hold++
		}
		b.observe(ext, arrival)
		return pushLate
	}
	if newest {
		b.refTS, b.refExt = ts, ext
	}
	b.observe(ext, arrival)
	b.store(ext, payload)
	b.highestEnd = max(b.highestEnd, end)
	return result
}

// begin anchors a new stream on a packet's timestamp, the cushion's depth before it.
func (b *jitterBuffer) begin(ts uint32) {
	b.empty()
	b.started = true
	b.refTS, b.refExt = ts, int64(ts)+1<<32 // extended values never go negative
	b.firstAudio, b.streamStart = b.refExt, b.refExt
	b.anchor = b.refExt - int64(b.depth)*b.frameSamples
	b.playhead, b.highestEnd = b.anchor, b.anchor
}

// restart makes the next packet start a new stream: the sender changed its SSRC or
// jumped its sequence numbers, so its timestamps are unrelated to the old ones.
func (b *jitterBuffer) restart() {
	if b.started {
		b.rebaseNext = true
	}
}

// rebase maps a new stream's timestamps onto the buffer's from ts on, placing it right
// after the audio already buffered (or the cushion, if the buffer ran dry): what was
// queued still plays, and the new stream follows without a gap or an overlap.
func (b *jitterBuffer) rebase(ts uint32) {
	b.restarts++
	b.rebaseNext, b.haveTransit = false, false
	from := max(b.highestEnd, b.playhead+int64(b.depth)*b.frameSamples)
	frames := (from - b.anchor + b.frameSamples - 1) / b.frameSamples
	b.refTS, b.refExt = ts, b.anchor+frames*b.frameSamples
	b.streamStart = b.refExt
}

// observe updates the RFC 3550 interarrival jitter: the smoothed change in transit time.
func (b *jitterBuffer) observe(ext, arrival int64) {
	transit := arrival - ext
	if b.haveTransit {
		d := transit - b.lastTransit
		if d < 0 {
			d = -d
		}
		b.jitter += (float64(d) - b.jitter) / 16
	}
	b.lastTransit, b.haveTransit = transit, true
}

// store copies the samples from ext on into their frames, skipping any before the playhead.
func (b *jitterBuffer) store(ext int64, payload []byte) {
	if skip := b.playhead - ext; skip > 0 {
		payload = payload[skip*int64(b.sampleBytes):]
		ext = b.playhead
	}
	for len(payload) > 0 {
		k := (ext - b.anchor) / b.frameSamples
		start := b.anchor + k*b.frameSamples
		s := &b.slots[k%jitterSlots]
		if s.ts != start {
			if s.frame == nil {
				s.frame = b.frames.Get().(*[]byte)
			}
			fill(*s.frame, b.silence)
			s.ts = start // ext is inside the frame: some audio is copied into it below
		}
		off := int(ext-start) * b.sampleBytes
		n := copy((*s.frame)[off:], payload)
		payload = payload[n:]
		ext += int64(n / b.sampleBytes)
	}
}

// pop writes the next 20 ms frame into dst (len frameBytes) and reports whether there was
// one: nothing plays before the first packet.
func (b *jitterBuffer) pop(dst []byte) bool {
	if !b.started {
		return false
	}
	b.heard = false
	if b.hold > 0 {
		b.hold--
		fill(dst, b.silence)
		return true
	}
	k := (b.playhead - b.anchor) / b.frameSamples
	slot := int(k % jitterSlots)
	if s := &b.slots[slot]; s.ts == b.playhead {
		b.heard = true
		copy(dst, *s.frame)
	} else {
		fill(dst, b.silence)
		if b.playhead >= b.firstAudio && b.highestEnd > b.playhead {
			b.concealed++ // later audio came, this frame's did not (yet)
		}
	}
	b.free(slot)
	b.playhead += b.frameSamples
	b.adapt()
	return true
}

// adapt moves the cushion toward the target once per window.
func (b *jitterBuffer) adapt() {
	b.minAhead = min(b.minAhead, b.highestEnd-b.playhead)
	b.pops++
	if b.pops < adaptEvery {
		return
	}
	target := b.target()
	switch {
	case target > b.depth:
		b.depth++
		b.hold++
	case b.depth > target && b.minAhead >= int64(target+1)*b.frameSamples:
		b.depth--
		k := (b.playhead - b.anchor) / b.frameSamples
		b.free(int(k % jitterSlots))
		b.playhead += b.frameSamples // skip one frame: a cushion the network does not need
	}
	b.minAhead, b.pops = 1<<62, 0
}

// target is the cushion the measured jitter asks for: three times the estimate, whole frames.
func (b *jitterBuffer) target() int {
	frames := int((3*b.jitter + float64(b.frameSamples) - 1) / float64(b.frameSamples))
	return min(max(frames, minDepth), maxDepth)
}

// jitterDuration is the estimate as a duration at rate samples per second.
func (b *jitterBuffer) jitterDuration(rate int) time.Duration {
	return time.Duration(b.jitter * float64(time.Second) / float64(rate))
}

func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}
