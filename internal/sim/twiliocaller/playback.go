package twiliocaller

import "time"

// Twilio's playback buffer, as the docs describe it: audio Handset sends is queued and
// played in real time (8 bytes of mu-law per millisecond) from when it arrives; a mark is
// returned once everything queued before it has played; clear drops everything queued and
// returns every pending mark at once. Twilio discards audio buffered beyond about ten
// minutes (warning 31931).
//
// playback is a pure state machine over times relative to stream start; the Call drives it
// under its lock and turns its results into events and mark echoes.

const (
	bytesPerMs = 8
	// pieceBytes splits queued audio into 20 ms pieces so the recording advances in
	// frame-sized steps even when Handset sends long chunks.
	pieceBytes = 160
	// maxBuffered is how far ahead Twilio will buffer outbound audio.
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

// piece is one queued item: audio (with its scheduled play window) or a mark (audio nil),
// due when the audio queued before it has played.
type piece struct {
	audio      []byte
	mark       string
	start, end time.Duration
}

type playback struct {
	queue []piece       // FIFO, head first; ends never decrease
	end   time.Duration // when everything queued will have played
}

// addAudio queues audio arriving at now. It reports false, queueing nothing, when the
// buffer would exceed maxBuffered.
func (p *playback) addAudio(now time.Duration, audio []byte) bool {
	start := max(now, p.end)
	if start+audioDuration(len(audio))-now > maxBuffered {
		return false
	}
	for len(audio) > 0 {
		n := min(len(audio), pieceBytes)
		end := start + audioDuration(n)
		p.queue = append(p.queue, piece{audio: audio[:n:n], start: start, end: end})
		audio, start = audio[n:], end
	}
	p.end = start
	return true
}

// addMark queues a mark arriving at now.
func (p *playback) addMark(now time.Duration, name string) {
	due := max(now, p.end)
	p.queue = append(p.queue, piece{mark: name, start: due, end: due})
}

// due removes and returns, in order, every piece that has finished playing by now, and
// every mark reached by now.
func (p *playback) due(now time.Duration) []piece {
	n := 0
	for n < len(p.queue) && p.queue[n].end <= now {
		n++
	}
	return p.take(n)
}

// clear empties the buffer at now. It returns what was heard of the pieces that had begun
// playing (normally just the one playing at now, cut short), the names of the marks still
// pending, in order, and how many bytes were dropped unplayed. Call due(now) first so
// marks already reached are echoed as played rather than cleared.
func (p *playback) clear(now time.Duration) (heard []piece, marks []string, dropped int) {
	for _, q := range p.take(len(p.queue)) {
		switch {
		case q.audio == nil:
			marks = append(marks, q.mark)
		case q.start < now:
			n := min(audioBytes(now-q.start), len(q.audio))
			heard = append(heard, piece{audio: q.audio[:n:n], start: q.start, end: q.start + audioDuration(n)})
			dropped += len(q.audio) - n
		default:
			dropped += len(q.audio)
		}
	}
	p.end = now
	return heard, marks, dropped
}

// next is when the head piece falls due; ok is false when nothing is queued.
func (p *playback) next() (at time.Duration, ok bool) {
	if len(p.queue) == 0 {
		return 0, false
	}
	return p.queue[0].end, true
}

// buffered is how many audio bytes are queued and not yet finished.
func (p *playback) buffered() int {
	n := 0
	for _, q := range p.queue {
		n += len(q.audio)
	}
	return n
}

func (p *playback) take(n int) []piece {
	if n == 0 {
		return nil
	}
	out := make([]piece, n)
	copy(out, p.queue[:n])
	clear(p.queue[:n])
	p.queue = p.queue[n:]
	if len(p.queue) == 0 {
		p.queue = nil // let the backing array go
	}
	return out
}
