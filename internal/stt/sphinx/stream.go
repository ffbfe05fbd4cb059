package sphinx

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/voice"
)

// tuning is how a stream gates, paces and bounds utterances; see the package comment for
// why each default. Tests shrink them.
type tuning struct {
	gateDBFS     float64       // a 20 ms frame louder than this opens an utterance
	preRoll      time.Duration // audio kept while idle and fed before the frame that opened it
	quiet        time.Duration // an utterance this long below the gate ends silently
	maxUtterance time.Duration // an utterance this long ends with its Final
	maxWait      time.Duration // audio kept while waiting for a decoder
	queue        time.Duration // audio Write queues for the goroutine
	partialEvery time.Duration // audio between two looks at the partial hypothesis
}

func defaultTuning() tuning {
	return tuning{
		gateDBFS:     -50,
		preRoll:      300 * time.Millisecond,
		quiet:        2 * time.Second,
		maxUtterance: 30 * time.Second,
		maxWait:      10 * time.Second,
		queue:        10 * time.Second,
		partialEvery: 100 * time.Millisecond,
	}
}

// resultsBuffer is the size of Results(). A partial that finds it full is dropped and
// counted (the next one supersedes it); a Final waits for room.
const resultsBuffer = 64

// frameSamples is the gate's unit: 20 ms at 16 kHz.
var frameSamples = modelRate * int(audio.FrameDuration/time.Millisecond) / 1000

// samplesIn is d of audio at the model's rate.
func samplesIn(d time.Duration) int { return int(d * modelRate / time.Second) }

// durationOf is n samples at the model's rate.
func durationOf(n int) time.Duration { return time.Duration(n) * time.Second / modelRate }

// phase is where a stream is in its utterance cycle.
type phase uint8

const (
	idle         phase = iota // no decoder; keeping pre-roll and watching the level
	waiting                   // the gate opened; waiting for a decoder, keeping everything
	waitingFinal              // Finalize came while waiting: the utterance is complete, decode it when a decoder comes
	active                    // holding a decoder, feeding it
)

// endReason is why an utterance ended.
type endReason uint8

const (
	endFinalize endReason = iota // Finalize: emit the Final
	endCap                       // maxUtterance: emit the Final
	endQuiet                     // quiet, or no audio: discard
	endAbort                     // the stream ended: discard
)

// stats counts what a stream did and lost. The goroutine writes them; tests and the end
// log read them.
type stats struct {
	utterances     atomic.Int64 // decoders taken and started
	finals         atomic.Int64 // Finals emitted (empty ones included)
	partials       atomic.Int64 // partials emitted
	droppedPartial atomic.Int64 // partials dropped because Results was full
	quietEnds      atomic.Int64 // utterances (or waits) ended by quiet or missing audio
	capped         atomic.Int64 // utterances ended at maxUtterance
	droppedQueue   atomic.Int64 // bytes dropped because the queue was full
	droppedWaiting atomic.Int64 // samples dropped while waiting for a decoder
	waited         atomic.Int64 // nanoseconds spent waiting for decoders
}

// stream is one call's PocketSphinx session, the voice.RecognizerStream Stream returns.
// Write and Finalize queue work for its one goroutine, which gates, waits for decoders,
// decodes and emits transcripts.
type stream struct {
	r    *Recognizer
	log  *slog.Logger
	f    audio.Format
	tune tuning
	clk  clock.Clock
	gate gate

	results   chan voice.Transcript
	wake      chan struct{} // size 1: "look at the inbox"
	stop      chan struct{} // closed by abort: end now
	done      chan struct{} // closed when the goroutine has ended and Results is closed
	abortOnce sync.Once

	mu        sync.Mutex // guards following
	in        inbox
	lastWrite time.Time // when audio last arrived (clk)
	stopping  bool
	err       error // why the stream ended; nil after Close

	st   stats
	busy atomic.Bool // the goroutine is handling something (tests wait for it to settle)

	// The goroutine's own state.
	conv         *converter
	chunk        []byte  // one take from the inbox
	frame        []int16 // samples of the 20 ms frame being filled
	held         samples // pre-roll while idle; everything while waiting
	phase        phase
	tk           *ticket // while waiting
	dec          decoder // while active
	waitFrom     time.Time
	lastHeard    time.Time // when the goroutine last took audio from the inbox
	uttSamples   int       // fed to the decoder in this utterance
	quietRun     int       // consecutive samples below the gate
	sincePartial int       // fed since the last look at the partial hypothesis
	lastPartial  string
	cmn          []float32   // this call's cepstral mean, carried from utterance to utterance
	starve       clock.Timer // fires when audio may have stopped arriving mid-utterance
	starveArmed  bool
	stopCtx      func() bool
}

var _ voice.RecognizerStream = (*stream)(nil)

func newStream(r *Recognizer, log *slog.Logger, f audio.Format, conv *converter) *stream {
	tune := r.tune
	return &stream{
		r: r, log: log, f: f, tune: tune, clk: r.clk, gate: newGate(tune.gateDBFS),
		results: make(chan voice.Transcript, resultsBuffer),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		in:      newInbox(f.Bytes(tune.queue), f.Encoding.BytesPerSample()),
		conv:    conv,
		chunk:   make([]byte, max(f.Bytes(100*time.Millisecond), f.Encoding.BytesPerSample())),
		frame:   make([]int16, 0, frameSamples),
	}
}

func (s *stream) start(ctx context.Context) {
	s.lastWrite = s.clk.Now()
	s.stopCtx = context.AfterFunc(ctx, func() {
		err := ctx.Err()
		s.abort(&voice.ProviderError{Provider: providerName, Op: "stream", Kind: voice.KindOf(err), Err: err})
	})
	s.log.Debug("sphinx: stream opened", "format", s.f.String())
	go s.run()
}

// Write queues audio. It never blocks: when the queue (about 10 s) is full the oldest
// audio is dropped and counted.
func (s *stream) Write(p []byte) error {
	s.mu.Lock()
	if s.stopping {
		err := s.endErrLocked()
		s.mu.Unlock()
		return err
	}
	d := s.in.push(p)
	s.lastWrite = s.clk.Now()
	s.mu.Unlock()
	if d > 0 && s.st.droppedQueue.Add(int64(d)) == int64(d) {
		s.log.Warn("sphinx: queue full, dropping the oldest audio", "queue", s.tune.queue)
	}
	s.poke()
	return nil
}

// Finalize ends the utterance after the audio written so far: its Final (empty when
// nothing was heard, or when no utterance was open) follows on Results. It never blocks.
func (s *stream) Finalize() error {
	s.mu.Lock()
	if s.stopping {
		err := s.endErrLocked()
		s.mu.Unlock()
		return err
	}
	s.in.mark()
	s.mu.Unlock()
	s.poke()
	return nil
}

func (s *stream) endErrLocked() error {
	if s.err != nil {
		return s.err
	}
	return ErrClosed
}

// Results delivers partials and Finals in order; it is closed when the stream ends.
func (s *stream) Results() <-chan voice.Transcript { return s.results }

// Close ends the stream: audio still queued and an utterance in progress are discarded,
// the decoder goes back to the pool, the goroutine ends and Results is closed. It returns
// the error that ended the stream before (a cancelled ctx, a closed Recognizer, a decoder
// failure), else nil. Idempotent.
func (s *stream) Close() error {
	s.abort(nil)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// abort ends the stream with err (nil for the owner's Close); the first call wins.
func (s *stream) abort(err error) {
	s.abortOnce.Do(func() {
		s.mu.Lock()
		s.stopping, s.err = true, err
		s.mu.Unlock()
		close(s.stop)
	})
}

func (s *stream) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run is the stream's goroutine.
func (s *stream) run() {
	defer s.teardown()
	for {
		s.busy.Store(true)
		select {
		case <-s.stop:
			return
		default:
		}
		if s.tk != nil {
			select {
			case d, ok := <-s.tk.ch:
				if !s.ok(s.granted(d, ok)) {
					return
				}
				continue
			default:
			}
		}
		if s.phase != waitingFinal {
			worked, err := s.step()
			if !s.ok(err) {
				return
			}
			if worked {
				continue
			}
		}
		var grant <-chan decoder
		if s.tk != nil {
			grant = s.tk.ch
		}
		var starve <-chan time.Time
		if s.starveArmed {
			starve = s.starve.C()
		}
		s.busy.Store(false)
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case d, ok := <-grant:
			s.busy.Store(true)
			if !s.ok(s.granted(d, ok)) {
				return
			}
		case <-starve:
			s.busy.Store(true)
			if !s.ok(s.starved()) {
				return
			}
		}
	}
}

// ok ends the stream with err, if any, and reports whether it goes on.
func (s *stream) ok(err error) bool {
	if err == nil {
		return true
	}
	s.abort(err)
	return false
}

// step handles the next thing in the inbox, up to 100 ms of audio or a Finalize, and
// reports whether there was one.
func (s *stream) step() (bool, error) {
	s.mu.Lock()
	n, fin := s.in.take(s.chunk)
	s.mu.Unlock()
	switch {
	case fin:
		return true, s.finalize()
	case n > 0:
		s.lastHeard = s.clk.Now()
		return true, s.hear(s.conv.convert(s.chunk[:n]))
	}
	return false, nil
}

// hear cuts 16 kHz audio into 20 ms frames for onFrame, keeping the remainder.
func (s *stream) hear(pcm []int16) error {
	for len(pcm) > 0 {
		n := min(frameSamples-len(s.frame), len(pcm))
		s.frame = append(s.frame, pcm[:n]...)
		pcm = pcm[n:]
		if len(s.frame) == frameSamples {
			err := s.onFrame(s.frame)
			s.frame = s.frame[:0]
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// onFrame moves one frame through the utterance cycle.
func (s *stream) onFrame(f []int16) error {
	loud := s.gate.loud(f)
	switch s.phase {
	case idle:
		s.held.push(f)
		if !loud {
			s.held.keepLast(samplesIn(s.tune.preRoll))
			return nil
		}
		return s.request()
	case waiting:
		s.held.push(f)
		if d := s.held.keepLast(samplesIn(s.tune.maxWait)); d > 0 && s.st.droppedWaiting.Add(int64(d)) == int64(d) {
			s.log.Warn("sphinx: waited too long for a decoder, dropping the oldest audio", "kept", s.tune.maxWait)
		}
		if s.isQuiet(loud, len(f)) {
			s.giveUp()
		}
		return nil
	case active:
		if err := s.feed(f); err != nil {
			return err
		}
		switch {
		case s.isQuiet(loud, len(f)):
			return s.end(endQuiet)
		case s.uttSamples >= samplesIn(s.tune.maxUtterance):
			return s.end(endCap)
		}
		s.maybePartial()
	}
	return nil
}

// isQuiet counts a frame's silence and reports whether the utterance has been quiet long
// enough to end.
func (s *stream) isQuiet(loud bool, n int) bool {
	if loud {
		s.quietRun = 0
		return false
	}
	s.quietRun += n
	return s.quietRun >= samplesIn(s.tune.quiet)
}

// request asks the pool for a decoder: the gate opened.
func (s *stream) request() error {
	s.phase = waiting
	s.quietRun = 0
	s.waitFrom = s.clk.Now()
	s.tk = s.r.pool.request()
	s.armStarve()
	select {
	case d, ok := <-s.tk.ch:
		return s.granted(d, ok)
	default:
		s.log.Debug("sphinx: waiting for a decoder")
		return nil
	}
}

// granted starts the utterance on the decoder the ticket delivered, feeding it the audio
// held since the gate opened (pre-roll first). After a Finalize while waiting it ends the
// utterance at once.
func (s *stream) granted(d decoder, ok bool) error {
	s.tk = nil
	if !ok {
		return &voice.ProviderError{Provider: providerName, Op: "stream", Kind: voice.KindCanceled, Err: errRecognizerClosed}
	}
	s.st.waited.Add(int64(s.clk.Now().Sub(s.waitFrom)))
	s.dec = d
	finalizing := s.phase == waitingFinal
	s.phase = active
	s.st.utterances.Add(1)
	if s.cmn == nil {
		s.cmn = s.r.cmnPrior(s.f.Rate)
	}
	if err := d.start(s.cmn); err != nil {
		s.r.pool.release(d)
		s.dec = nil
		s.phase = idle
		return decodeError(err)
	}
	backlog := s.held.all()
	if len(backlog) > 0 {
		if err := s.feed(backlog); err != nil {
			return err
		}
	}
	s.held.reset()
	if finalizing {
		return s.end(endFinalize)
	}
	if s.uttSamples >= samplesIn(s.tune.maxUtterance) {
		return s.end(endCap)
	}
	s.maybePartial()
	return nil
}

// giveUp stops waiting for a decoder: the gate opened on a noise that went quiet.
func (s *stream) giveUp() {
	s.r.pool.cancel(s.tk)
	s.tk = nil
	s.phase = idle
	s.disarmStarve()
	s.held.keepLast(samplesIn(s.tune.preRoll))
	s.st.quietEnds.Add(1)
}

func (s *stream) feed(pcm []int16) error {
	if err := s.dec.process(pcm); err != nil {
		return decodeError(err)
	}
	s.uttSamples += len(pcm)
	s.sincePartial += len(pcm)
	return nil
}

// maybePartial emits the partial hypothesis when partialEvery of audio has passed since
// the last look and it changed.
func (s *stream) maybePartial() {
	if s.sincePartial < samplesIn(s.tune.partialEvery) {
		return
	}
	s.sincePartial = 0
	h := normalizeHyp(s.dec.partial())
	if h == "" || h == s.lastPartial {
		return
	}
	s.lastPartial = h
	select {
	case s.results <- voice.Transcript{Text: h}:
		s.st.partials.Add(1)
	default:
		s.st.droppedPartial.Add(1)
	}
}

// finalize handles a Finalize: the frame being filled is heard, then the open utterance
// ends with its Final; with none open the Final is empty.
func (s *stream) finalize() error {
	if len(s.frame) > 0 {
		err := s.onFrame(s.frame)
		s.frame = s.frame[:0]
		if err != nil {
			return err
		}
	}
	switch s.phase {
	case idle:
		s.emitFinal("")
	case waiting:
		s.phase = waitingFinal // the goroutine now waits only for the decoder
		s.disarmStarve()
	case active:
		return s.end(endFinalize)
	}
	return nil
}

// end ends the utterance, gives the decoder back and, for Finalize and the cap, emits the
// Final.
func (s *stream) end(why endReason) error {
	hyp, cmn, err := s.dec.end()
	s.r.pool.release(s.dec)
	s.dec = nil
	s.phase = idle
	s.disarmStarve()
	s.uttSamples, s.quietRun, s.sincePartial, s.lastPartial = 0, 0, 0, ""
	if err != nil {
		return decodeError(err)
	}
	text := normalizeHyp(hyp)
	s.keepCMN(cmn, why != endQuiet && text != "")
	switch why {
	case endFinalize:
		s.emitFinal(text)
	case endCap:
		s.st.capped.Add(1)
		s.emitFinal(text)
	case endQuiet:
		s.st.quietEnds.Add(1)
	}
	return nil
}

// keepCMN keeps the normalisation state an utterance ended with for the stream's next
// one: each call adapts to its own line, whichever decoder it gets. When the utterance
// was speech (heard words, ended by Finalize or the cap), the state also becomes the
// prior for new streams at this rate; a noise the gate let through does not.
func (s *stream) keepCMN(cmn []float32, speech bool) {
	if len(cmn) == 0 {
		return
	}
	s.cmn = cmn
	if speech {
		s.r.setCMNPrior(s.f.Rate, cmn)
	}
}

// emitFinal delivers a Final, waiting for room in Results unless the stream is ending.
func (s *stream) emitFinal(text string) {
	select {
	case s.results <- voice.Transcript{Text: text, Final: true}:
		s.st.finals.Add(1)
	case <-s.stop:
	}
}

// armStarve starts the watch for audio that stops arriving while a decoder is wanted or
// held (the engine does not write while the agent speaks): quiet that no frame measures.
func (s *stream) armStarve() {
	if s.starve == nil {
		s.starve = s.clk.NewTimer(s.tune.quiet)
	} else {
		s.starve.Reset(s.tune.quiet)
	}
	s.starveArmed = true
}

func (s *stream) disarmStarve() {
	if s.starve != nil {
		s.starve.Stop()
	}
	s.starveArmed = false
}

// starved runs when the starvation timer fires: if for quiet no audio has arrived and the
// goroutine has had none to hear (a burst written at once is heard for a while after),
// the utterance (or the wait) ends as if it had gone quiet.
func (s *stream) starved() error {
	if !s.starveArmed || (s.phase != waiting && s.phase != active) {
		return nil
	}
	s.mu.Lock()
	last := s.lastWrite
	empty := s.in.empty()
	s.mu.Unlock()
	if s.lastHeard.After(last) {
		last = s.lastHeard
	}
	since := s.clk.Now().Sub(last)
	switch {
	case !empty:
		s.starve.Reset(s.tune.quiet) // behind, not starved: the queue will be heard first
		return nil
	case since < s.tune.quiet:
		s.starve.Reset(s.tune.quiet - since)
		return nil
	}
	s.log.Debug("sphinx: no audio, ending the utterance", "for", since)
	s.frame = s.frame[:0]
	if s.phase == waiting {
		s.giveUp()
		return nil
	}
	return s.end(endQuiet)
}

// teardown gives back what the goroutine holds and closes Results.
func (s *stream) teardown() {
	s.stopCtx()
	switch {
	case s.dec != nil:
		_, _, _ = s.dec.end()
		s.r.pool.release(s.dec)
		s.dec = nil
	case s.tk != nil:
		s.r.pool.cancel(s.tk)
		s.tk = nil
	}
	s.disarmStarve()
	close(s.results)
	s.r.forget(s)
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	s.log.Debug("sphinx: stream ended", "err", err,
		"utterances", s.st.utterances.Load(), "finals", s.st.finals.Load(), "partials", s.st.partials.Load(),
		"quiet_ends", s.st.quietEnds.Load(), "capped", s.st.capped.Load(),
		"waited", time.Duration(s.st.waited.Load()).Round(time.Millisecond),
		"dropped_queue", s.f.Duration(int(s.st.droppedQueue.Load())),
		"dropped_waiting", durationOf(int(s.st.droppedWaiting.Load())),
		"dropped_partials", s.st.droppedPartial.Load())
	close(s.done)
}

func decodeError(err error) error {
	return &voice.ProviderError{Provider: providerName, Op: "decode", Kind: voice.KindUnknown, Err: err}
}
