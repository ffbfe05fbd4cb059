// Package recording records calls: a two-channel WAV file per call (caller left, agent
// right, both on one timeline from the call's start), written beside the call's journal;
// it reads recordings back for playback and as waveform peaks, and deletes old ones.
//
// The per-frame path is a copy into a preallocated ring under a lock the writer takes
// about once a second; a writer goroutine per call decodes, interleaves and appends the
// settled part of the timeline to the file, patching the header's sizes on every flush
// so a file cut short by a crash still plays up to its last flush.
package recording

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/obs"
)

// FileName is a recording's name inside its call's folder (obs.Dir).
const FileName = "recording.wav"

// Timeline bounds, in time: how much each channel's ring holds, how much unwritten audio
// wakes the writer, and how far behind the latest audio the writer stays, so frames that
// come a little late (jitter) or are cut by a clear still land in the ring, not the file.
const (
	ringSpan  = 3 * time.Second
	flushSpan = 1500 * time.Millisecond
	settle    = 500 * time.Millisecond
	// rejoin: caller audio is placed back to back as the carrier counts it; when it falls
	// this far behind the call's clock (the carrier paused its stream, or its clock is
	// slower than ours), it is placed by the clock again, leaving silence for the gap.
	rejoin = 250 * time.Millisecond
)

// chunkSamples is the most one write holds, per channel. The buffers a write is built in
// are shared by every call (scratchPool): a call holds one only while it writes.
const chunkSamples = 8192 // a flush's worth at 8 kHz: one write

type scratch struct {
	left, right []int16
	out         []byte
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{left: make([]int16, chunkSamples), right: make([]int16, chunkSamples), out: make([]byte, 4*chunkSamples)}
}}

// headerSize is the size of the canonical 44-byte WAVE header this package writes.
const headerSize = 44

// maxDataBytes keeps the data chunk within RIFF's 32-bit sizes.
const maxDataBytes = math.MaxUint32 - headerSize

// Options say where and what to record.
type Options struct {
	// Path is the file to create (it must not exist).
	Path string
	// Format is the leg's: what Caller and Agent are given. The file is PCM16 at its rate.
	Format  audio.Format
	Journal *obs.Journal // recording.start, recording.stop, recording.error; may be nil
	Logger  *slog.Logger
}

// Recorder records one call. Caller, Agent and Cleared may be called from different
// goroutines; Start comes first and Close last.
type Recorder struct {
	path    string
	format  audio.Format
	bps     int // bytes per sample on the leg
	journal *obs.Journal
	log     *slog.Logger
	file    *os.File

	zero   atomic.Int64 // the call's start (unix ns): sample 0 of both channels
	failed atomic.Bool  // a write failed: recording stopped, the call goes on
	caller track
	agent  track
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}

	// Owned by the writer goroutine (and Close, once it has stopped).
	written int64 // samples per channel in the file
	head    [headerSize]byte
	closed  bool
}

// track is one channel's ring: raw frames in the leg's encoding, indexed by sample
// position on the call's timeline.
type track struct {
	mu      sync.Mutex // guards following; taken per frame and by the writer once per flush
	ring    []byte
	base    int64 // the first position not yet written to the file
	end     int64 // one past the latest position placed
	cursor  int64 // where this channel's next frame goes; -1 before its first
	dropped int64 // samples that could not be placed (writer behind, or too late)
}

// New creates the file and its header. Frames are ignored until Start.
func New(o Options) (*Recorder, error) {
	if o.Format.Rate <= 0 || o.Format.Rate > 192000 {
		return nil, fmt.Errorf("recording: sample rate %d Hz", o.Format.Rate)
	}
	silence, ok := silenceOf(o.Format.Encoding)
	if !ok {
		return nil, fmt.Errorf("recording: encoding %s", o.Format.Encoding)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	f, err := os.OpenFile(o.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	if _, err := f.Write(header(o.Format.Rate, 0)); err != nil {
		_ = f.Close()
		_ = os.Remove(o.Path)
		return nil, fmt.Errorf("recording: %w", err)
	}
	samples := samplesIn(ringSpan, o.Format.Rate)
	bps := o.Format.Encoding.BytesPerSample()
	r := &Recorder{
		path: o.Path, format: o.Format, bps: bps, journal: o.Journal, log: o.Logger, file: f,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	r.zero.Store(-1)
	for _, t := range []*track{&r.caller, &r.agent} {
		t.ring = make([]byte, samples*int64(bps))
		fill(t.ring, silence)
		t.cursor = -1
	}
	return r, nil
}

// Path is the file being written.
func (r *Recorder) Path() string { return r.path }

// Start sets the timeline's zero (the call's start on the call's clock), journals it and
// starts the writer.
func (r *Recorder) Start(at time.Time) {
	if !r.zero.CompareAndSwap(-1, at.UnixNano()) {
		return
	}
	r.record(at, obs.Event{Type: obs.RecordingStart, Name: FileName})
	go r.run()
}

// Caller records a frame of the caller's audio received at at. Frames are placed back to
// back as the carrier sent them (see rejoin).
func (r *Recorder) Caller(at time.Time, frame []byte) {
	r.place(&r.caller, at, frame, true)
}

// Agent records a frame (or several) sent to the carrier at at. It plays after what was
// sent before it, or at at if the carrier had run dry.
func (r *Recorder) Agent(at time.Time, frame []byte) {
	r.place(&r.agent, at, frame, false)
}

// Cleared says the carrier was told at at to drop what it had buffered: agent audio placed
// after that moment never played, so it leaves the recording.
func (r *Recorder) Cleared(at time.Time) {
	if r.failed.Load() || r.zero.Load() < 0 {
		return
	}
	now := r.position(at)
	t := &r.agent
	silence, _ := silenceOf(r.format.Encoding)
	t.mu.Lock()
	if t.cursor > now {
		from := max(now, t.base)
		if from < t.end {
			r.fillRange(t, from, t.end, silence)
		}
		t.cursor = now
		t.end = max(from, min(t.end, now))
	}
	t.mu.Unlock()
}

// position is at's sample index on the timeline.
func (r *Recorder) position(at time.Time) int64 {
	d := at.UnixNano() - r.zero.Load()
	if d <= 0 {
		return 0
	}
	return d * int64(r.format.Rate) / int64(time.Second)
}

// place copies frame into t's ring where it belongs. No allocation, no system call.
func (r *Recorder) place(t *track, at time.Time, frame []byte, contiguous bool) {
	if r.failed.Load() || r.zero.Load() < 0 || len(frame) < r.bps {
		return
	}
	now := r.position(at)
	n := int64(len(frame) / r.bps)
	ringLen := int64(len(t.ring) / r.bps)
	t.mu.Lock()
	pos := t.cursor
	switch {
	case pos < 0:
		pos = now
	case contiguous && now-pos > samplesIn(rejoin, r.format.Rate):
		pos = now
	case !contiguous:
		pos = max(pos, now)
	}
	t.cursor = pos + n
	if pos < t.base { // too late: the file already holds this moment
		skip := min(t.base-pos, n)
		t.dropped += skip
		frame, pos, n = frame[skip*int64(r.bps):], t.base, n-skip
	}
	if n > 0 && pos+n > t.base+ringLen { // the writer is far behind
		t.dropped += n
		n = 0
	}
	if n > 0 {
		off := (pos % ringLen) * int64(r.bps)
		k := copy(t.ring[off:], frame[:n*int64(r.bps)])
		copy(t.ring, frame[k:n*int64(r.bps)])
		t.end = max(t.end, pos+n)
	}
	due := t.end-t.base >= samplesIn(flushSpan, r.format.Rate)
	t.mu.Unlock()
	if due {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// run is the writer: it flushes the settled part of the timeline when woken.
func (r *Recorder) run() {
	defer close(r.done)
	for {
		select {
		case <-r.stop:
			return
		case <-r.wake:
			r.flush(false)
		}
	}
}

// flush writes the timeline up to the settle point (all of it when final).
func (r *Recorder) flush(final bool) {
	if r.failed.Load() {
		return
	}
	r.caller.mu.Lock()
	hi := r.caller.end
	r.caller.mu.Unlock()
	r.agent.mu.Lock()
	hi = max(hi, r.agent.end)
	r.agent.mu.Unlock()
	if !final {
		hi -= samplesIn(settle, r.format.Rate)
	}
	if hi <= r.written {
		return
	}
	if room := (maxDataBytes - 4*r.written) / 4; hi-r.written > room {
		r.fail(errors.New("the recording reached the largest size a WAVE file can hold"))
		return
	}
	buf := scratchPool.Get().(*scratch)
	defer scratchPool.Put(buf)
	for r.written < hi {
		to := min(hi, r.written+chunkSamples)
		left, right := r.take(&r.caller, buf.left, to), r.take(&r.agent, buf.right, to)
		out := buf.out[:4*len(left)]
		for i := range left {
			binary.LittleEndian.PutUint32(out[4*i:], uint32(uint16(left[i]))|uint32(uint16(right[i]))<<16)
		}
		if _, err := r.file.WriteAt(out, headerSize+4*r.written); err != nil {
			r.fail(err)
			return
		}
		r.written = to
	}
	if err := r.patchSizes(); err != nil {
		r.fail(err)
	}
}

// take decodes t's samples [written, hi) into dst and gives their ring space back.
func (r *Recorder) take(t *track, dst []int16, hi int64) []int16 {
	silence, _ := silenceOf(r.format.Encoding)
	n := hi - r.written
	dst = dst[:n]
	ringLen := int64(len(t.ring) / r.bps)
	t.mu.Lock()
	for i := int64(0); i < n; { // the span in at most two runs of the ring
		off := (r.written + i) % ringLen
		run := min(n-i, ringLen-off)
		decode(dst[i:i+run], t.ring[off*int64(r.bps):(off+run)*int64(r.bps)], r.format.Encoding)
		i += run
	}
	r.fillRange(t, r.written, hi, silence)
	t.base = hi
	t.end = max(t.end, hi)
	t.mu.Unlock()
	return dst
}

// fillRange writes silence over t's ring positions [from, to) (t.mu held).
func (r *Recorder) fillRange(t *track, from, to int64, silence byte) {
	ringLen := int64(len(t.ring) / r.bps)
	for p := from; p < to; {
		off := p % ringLen
		run := min(to-p, ringLen-off)
		fill(t.ring[off*int64(r.bps):(off+run)*int64(r.bps)], silence)
		p += run
	}
}

// patchSizes rewrites the header with the sizes of what the file holds now (one write).
func (r *Recorder) patchSizes() error {
	_, err := r.file.WriteAt(appendHeader(r.head[:0], r.format.Rate, uint32(4*r.written)), 0)
	return err
}

// fail stops the recording for good (the call goes on), once.
func (r *Recorder) fail(err error) {
	if r.failed.Swap(true) {
		return
	}
	r.log.Error("recording stopped: the call goes on unrecorded", "path", r.path, "err", err)
	r.record(time.Now(), obs.Event{Type: obs.RecordingError, Message: err.Error()})
}

// Close writes what is left, patches the header and closes the file; at is the call's end.
// It journals recording.stop with the recording's length.
func (r *Recorder) Close(at time.Time) error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.zero.Load() >= 0 {
		close(r.stop)
		<-r.done
	}
	r.flush(true)
	err := r.file.Close()
	if d := r.caller.dropped + r.agent.dropped; d > 0 {
		r.log.Warn("recording left out audio that came too late or too early", "path", r.path, "samples", d)
	}
	length := time.Duration(r.written) * time.Second / time.Duration(r.format.Rate)
	if r.zero.Load() >= 0 {
		r.record(at, obs.Event{Type: obs.RecordingStop, Name: FileName, AudioMS: length.Milliseconds()})
	}
	if err != nil && !r.failed.Load() {
		r.fail(err)
	}
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	return nil
}

func (r *Recorder) record(at time.Time, e obs.Event) {
	if r.journal != nil {
		r.journal.Record(at, e)
	}
}

// header is the 44-byte header of a two-channel PCM16 WAVE file holding dataBytes.
func header(rate int, dataBytes uint32) []byte {
	return appendHeader(make([]byte, 0, headerSize), rate, dataBytes)
}

// appendHeader appends header(rate, dataBytes) to h.
func appendHeader(h []byte, rate int, dataBytes uint32) []byte {
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, 36+dataBytes)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)
	h = binary.LittleEndian.AppendUint16(h, 1) // PCM
	h = binary.LittleEndian.AppendUint16(h, 2) // caller left, agent right
	h = binary.LittleEndian.AppendUint32(h, uint32(rate))
	h = binary.LittleEndian.AppendUint32(h, uint32(rate*4)) // bytes per second
	h = binary.LittleEndian.AppendUint16(h, 4)              // block align
	h = binary.LittleEndian.AppendUint16(h, 16)             // bits per sample
	h = append(h, "data"...)
	return binary.LittleEndian.AppendUint32(h, dataBytes)
}

func silenceOf(e audio.Encoding) (byte, bool) {
	switch e {
	case audio.PCM16:
		return 0, true
	case audio.Mulaw:
		return g711.MulawSilence, true
	case audio.Alaw:
		return g711.AlawSilence, true
	}
	return 0, false
}

// decode turns src, in encoding e, into len(dst) linear samples.
func decode(dst []int16, src []byte, e audio.Encoding) {
	switch e {
	case audio.Mulaw:
		g711.DecodeMulaw(dst, src)
	case audio.Alaw:
		g711.DecodeAlaw(dst, src)
	default:
		for i := range dst {
			dst[i] = int16(binary.LittleEndian.Uint16(src[2*i:]))
		}
	}
}

func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

func samplesIn(d time.Duration, rate int) int64 { return int64(d) * int64(rate) / int64(time.Second) }
