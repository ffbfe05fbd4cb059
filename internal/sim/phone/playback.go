package phone

import (
	"slices"
	"time"
)

// A carrier's playback buffer, as Twilio documents it and every carrier leg reproduces:
// audio Handset sends is queued and played in real time (8 bytes of 8 kHz mu-law per
// millisecond) from when it arrives; a mark is returned once everything queued before it
// has played; clear drops everything queued and returns every pending mark at once. Audio
// buffered beyond a limit (Twilio: about ten minutes, warning 31931) is discarded.
//
// playback is a pure state machine over times relative to stream start; the Call drives it
// under its lock and turns its results into events and mark echoes.

const (
	// pieceBytes splits queued audio into 20 ms pieces so the recording advances in
	// frame-sized steps even when Handset sends long chunks.
	pieceBytes = 160
	// maxBuffered is how far ahead the buffer holds audio unless the wire says otherwise.
	maxBuffered = 10 * time.Minute
)

// audioDuration is how long n bytes of 8 kHz mu-law play.
func audioDuration(n int) time.Duration { return time.Duration(n) * 125 * time.Microsecond }

// audioBytes is how many bytes play in d, rounded down.
func audioBytes(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(d / (125 * time.Microsecond))
}

// piece is one queued item: n bytes of audio (with its scheduled play window) or a mark
// (n 0), due when the audio queued before it has played.
type piece struct {
	audio      []byte // the audio's bytes; nil for a mark, and when the buffer keeps lengths only
	n          int    // audio bytes; 0 for a mark
	mark       string
	start, end time.Duration
}

func (q piece) isMark() bool { return q.n == 0 }

// maxIdlePieces bounds the queue capacity kept for reuse once the queue empties (about
// five seconds of 20 ms pieces), so one long burst does not pin its array for the call.
const maxIdlePieces = 256

type playback struct {
	// buf[head:] is the queue, FIFO, head first; ends never decrease. Played pieces are
	// popped by advancing head and the array is reused, so a steady stream of frames
	// queues and plays without allocating.
	buf  []piece
	head int
	end  time.Duration // when everything queued will have played
	// lengthsOnly queues audio by length alone, for a lean call with nothing (no echo)
	// that reads the bytes back.
	lengthsOnly bool
	// limit is how far ahead audio may be queued; maxBuffered when zero.
	limit time.Duration
	out   []piece // due's result, reused
}

// pending is the queue, head first. It is valid until p next changes.
func (p *playback) pending() []piece { return p.buf[p.head:] }

// addAudio queues audio arriving at now. It reports false, queueing nothing, when the
// buffer would exceed its limit.
func (p *playback) addAudio(now time.Duration, audio []byte) bool {
	start := max(now, p.end)
	limit := p.limit
	if limit <= 0 {
		limit = maxBuffered
	}
	if start+audioDuration(len(audio))-now > limit {
		return false
	}
	for len(audio) > 0 {
		n := min(len(audio), pieceBytes)
		end := start + audioDuration(n)
		q := piece{n: n, start: start, end: end}
		if !p.lengthsOnly {
			q.audio = audio[:n:n]
		}
		p.buf = append(p.buf, q)
		audio, start = audio[n:], end
	}
	p.end = start
	return true
}

// addMark queues a mark arriving at now.
func (p *playback) addMark(now time.Duration, name string) {
	due := max(now, p.end)
	p.buf = append(p.buf, piece{mark: name, start: due, end: due})
}

// due removes and returns, in order, every piece that has finished playing by now, and
// every mark reached by now. The result is reused: it is valid until the next call.
func (p *playback) due(now time.Duration) []piece {
	q := p.pending()
	n := 0
	for n < len(q) && q[n].end <= now {
		n++
	}
	if n == 0 {
		return nil
	}
	clear(p.out) // drop the last result's audio
	p.out = append(p.out[:0], q[:n]...)
	if cap(p.out) > maxIdlePieces {
		p.out = slices.Clone(p.out) // sized to this result; the oversized array goes
	}
	p.pop(n)
	return p.out
}

// clear empties the buffer at now. It returns what was heard of the pieces that had begun
// playing (normally just the one playing at now, cut short), the names of the marks still
// pending, in order, and how many bytes were dropped unplayed. Call due(now) first so
// marks already reached are echoed as played rather than cleared.
func (p *playback) clear(now time.Duration) (heard []piece, marks []string, dropped int) {
	q := p.pending()
	for _, q := range q {
		switch {
		case q.isMark():
			marks = append(marks, q.mark)
		case q.start < now:
			n := min(audioBytes(now-q.start), q.n)
			h := piece{n: n, start: q.start, end: q.start + audioDuration(n)}
			if q.audio != nil {
				h.audio = q.audio[:n:n]
			}
			heard = append(heard, h)
			dropped += q.n - n
		default:
			dropped += q.n
		}
	}
	p.pop(len(q))
	p.end = now
	return heard, marks, dropped
}

// next is when the head piece falls due; ok is false when nothing is queued.
func (p *playback) next() (at time.Duration, ok bool) {
	if p.head == len(p.buf) {
		return 0, false
	}
	return p.buf[p.head].end, true
}

// buffered is how many audio bytes are queued and not yet finished.
func (p *playback) buffered() int {
	n := 0
	for _, q := range p.pending() {
		n += q.n
	}
	return n
}

// pop drops the n pieces at the head. The array is kept for reuse: rewound when the queue
// empties, compacted when more than half of it is popped pieces.
func (p *playback) pop(n int) {
	clear(p.buf[p.head : p.head+n]) // let their audio go
	p.head += n
	switch {
	case p.head == len(p.buf) && cap(p.buf) > maxIdlePieces:
		p.buf, p.head = nil, 0
	case p.head == len(p.buf):
		p.buf, p.head = p.buf[:0], 0
	case p.head > len(p.buf)/2:
		live := copy(p.buf, p.buf[p.head:])
		clear(p.buf[live:])
		p.buf, p.head = p.buf[:live], 0
	}
}
