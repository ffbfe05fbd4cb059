// Package call runs calls: one owner goroutine per call holds all of its state, feeds the
// turn state machine and carries out its actions (dispatching turns to the agent, speaking,
// clearing playout); a Manager admits, tracks and drains calls. It knows providers only by
// their voice contracts.
package call

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/ring"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/voice"
)

// Config is how a call behaves.
type Config struct {
	Turn turn.Config
	// PlayoutLead is how far ahead of real time audio may be sent to the carrier.
	PlayoutLead time.Duration
	// ClockedLead replaces PlayoutLead for a leg that sends on a clock of its own (a SIP
	// trunk's RTP): its queue is the only buffer between the playout and the caller, and
	// a clear empties it at once, so a deeper lead costs the caller nothing while it
	// covers the playout's late wake-ups on a busy core (each one longer than the lead is
	// a frame of silence inside a sentence: an underrun).
	ClockedLead time.Duration
	// ClearDrain is the quiet time after a clear before new audio goes out.
	ClearDrain time.Duration
	// CallerHash identifies the caller to the agent without the number.
	CallerHash string
	// Caller says why there is no caller hash ("withheld", "unverified"), for the journal.
	Caller string
	// EchoOff turns off echo handling: the VAD hears the line as it comes.
	EchoOff bool
	// EchoMaxDelay is the longest echo delay looked for (zero: echo.DefaultMaxDelay).
	EchoMaxDelay time.Duration
	// AgentTurnTimeout bounds a whole agent turn, from the request to the reply's end,
	// however many events the runtime sends meanwhile (a runtime's own timeout only
	// measures silence). Past it the run is aborted and the turn fails as a timeout, so the
	// caller hears the error message. Zero: no bound.
	AgentTurnTimeout time.Duration
	// HistoryLimit is how many of the call's latest messages the history keeps and sends
	// (zero: all of them).
	HistoryLimit int
	// STTRetryMin and STTRetryMax bound the wait before the recognizers are tried again
	// once every one has failed: it doubles from the first to the second, for as long as
	// the call lasts (see stt.go).
	STTRetryMin, STTRetryMax time.Duration
	// STTGrace is how long the call may go without a working recognizer before the turn
	// machine is told (and the fallback is tried beside a primary whose open hangs).
	STTGrace time.Duration
	// TTSTimeout is the longest a voice may stay silent, before a sentence's first audio or
	// between two pieces of it, before the sentence goes to the next voice.
	TTSTimeout time.Duration
	// TTSHold is how long, after the primary voice failed a sentence, the fallback voice
	// speaks first.
	TTSHold time.Duration
}

// DefaultConfig returns the engine defaults (turn-taking settings come from config).
func DefaultConfig() Config {
	return Config{
		Turn:        turn.Config{BargeInGate: 500 * time.Millisecond, MaxCall: time.Hour},
		PlayoutLead: 80 * time.Millisecond,
		ClockedLead: 240 * time.Millisecond,
		ClearDrain:  150 * time.Millisecond,
		STTRetryMin: 250 * time.Millisecond,
		STTRetryMax: 4 * time.Second,
		STTGrace:    time.Second,
		TTSTimeout:  3 * time.Second,
		TTSHold:     30 * time.Second,
	}
}

// Deps are the call's collaborators.
type Deps struct {
	Leg voice.Leg
	STT voice.Recognizer
	// STTFallback, when set, hears the caller while STT is down (see stt.go).
	STTFallback voice.Recognizer
	TTS         voice.Synthesizer
	// TTSFallback, when set, speaks what TTS cannot (see speak.go).
	TTSFallback voice.Synthesizer
	Agent       voice.Agent
	NewVAD      func(rate int) (vad.Detector, error) // one detector per call
	Clock       clock.Clock
	Journal     *obs.Journal
	Logger      *slog.Logger
	// CallContext, when set, adds per-call values (the session context agent runtimes
	// read) to the call's context.
	CallContext func(context.Context) context.Context
	// Metrics, when set, counts turns, frame timing and drops for GET /metrics.
	Metrics *obs.Metrics
	// Transcript, when set, receives each line of the conversation as it settles: the
	// caller's words when the turn is committed, the agent's when they have played or
	// been cut off (then what the caller heard). It runs on the owner goroutine and must
	// not block.
	Transcript func(store.TranscriptLine)
	// Recorder, when set, records the call's audio as it crossed the wire (see
	// recording.go); nil: not recorded, at no cost.
	Recorder Recorder
}

// Sizes of a call's queues.
const (
	// inboundSlots holds 1 s of caller audio; when the owner falls that far behind the
	// oldest frames are dropped (and counted), so latency stays bounded.
	inboundSlots = 50
	// rescueSlots keeps the last ~260 ms of caller audio heard while the agent spoke, so
	// the first words of an interruption reach STT.
	rescueSlots = 13
	// eventQueue carries control events; senders block (with the context) when it is full.
	eventQueue = 64
)

// Call is one call. Create with New, then Run once.
type Call struct {
	cfg  Config
	deps Deps
	info voice.LegInfo
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the call started

	events  chan any
	inbound *ring.Frames // carrier reader -> owner
	// sendClock is the leg's own send clock, if it has one: the loop lends it its time
	// (see voice.SendClocked).
	sendClock voice.SendClocked
	rescue    *ring.Frames // owner only
	playout   *playout
	// echo is the line's echo path: the playout places what it sent, the owner takes what
	// the path explains out of what the VAD hears. Nil when echo handling is off.
	echo *echo.Line
	// inPos counts the caller's samples received; inEpoch (unix ns, 0: none yet) is when
	// sample 0 would have arrived had every frame come as fast as the fastest: with it,
	// where on the inbound timeline audio sent now will play (inboundPosition).
	inPos, inEpoch atomic.Int64

	malformed atomic.Uint64
	ended     chan struct{}
	reason    voice.EndReason

	// Owned by the Run goroutine only.
	fsm         turn.State
	stt         voice.RecognizerStream
	vad         vad.Detector
	pcm         []int16
	clean       []int16 // what the VAD hears of a frame once echo is taken out
	echoTally   echoTally
	frame       []byte
	gotMedia    bool
	heard       int64 // caller samples through the VAD
	sttSt       sttState
	reply       *reply
	history     history
	timers      map[turn.TimerID]clock.Timer
	ttsByteTurn int // the latest turn whose first TTS byte is journaled
	endReason   voice.EndReason
	// transferring: a transfer away from Handset is under way, so the media leg ending is
	// the carrier moving the call, not the caller hanging up.
	transferring bool
	lastFinalAt  time.Time // the latest STT final not yet committed
	notice       string    // the recording notice being said (notice.go); empty once heard
	noticeOpen   *reply    // the notice's reply, its queue open for the greeting (notice.go)
	timing       turnTiming

	// ttsHoldUntil (unix ns on the call's clock): until then the fallback voice goes
	// first, the primary having failed. Set by speaker goroutines.
	ttsHoldUntil atomic.Int64
}

// turnTiming holds the milestones of the dispatched turn that make up its latency (as
// obs.Turns reads them from the journal), for the metrics.
type turnTiming struct {
	turn                      int
	finalAt, requestAt, ttsAt time.Time
	overhead                  time.Duration // Handset's share, once the first audio is out; -1 before
}

// New prepares a call on leg. ctx is the server's context, never a request's.
func New(ctx context.Context, cfg Config, deps Deps) *Call {
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	info := deps.Leg.Info()
	if deps.CallContext != nil {
		ctx = deps.CallContext(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	frameBytes := info.Format.FrameBytes()
	c := &Call{
		cfg: cfg, deps: deps, info: info,
		log:    deps.Logger.With("call", string(info.CallID), "carrier", info.Carrier),
		ctx:    ctx,
		cancel: cancel,
		events: make(chan any, eventQueue),
		// A slot is one 20 ms frame; a carrier's larger frames take several slots.
		inbound: ring.NewFrames(inboundSlots, frameBytes),
		rescue:  ring.NewFrames(rescueSlots, frameBytes),
		ended:   make(chan struct{}),
		fsm:     turn.New(cfg.Turn),
		pcm:     make([]int16, 4*info.Format.Rate/50),
		clean:   make([]int16, 4*info.Format.Rate/50),
		frame:   make([]byte, 4*frameBytes),

		history:     history{limit: cfg.HistoryLimit},
		ttsByteTurn: -1,
	}
	c.sendClock, _ = deps.Leg.(voice.SendClocked)
	c.initSTT(frameBytes)
	lead := cfg.PlayoutLead
	if c.sendClock != nil {
		lead = cfg.ClockedLead
	}
	c.playout = newPlayout(deps.Leg, deps.Clock, lead, cfg.ClearDrain, func(t int, start audioStart) {
		c.post(audioOnWire{turn: t, start: start})
	})
	if !cfg.EchoOff && !info.EchoCancelled {
		line, err := echo.NewLine(info.Format.Rate, cfg.EchoMaxDelay)
		if err != nil {
			c.log.Error("echo handling off for this call", "err", err)
		} else {
			c.echo = line
			c.playout.echo, c.playout.position = line, c.inboundPosition
		}
	}
	c.playout.metrics = deps.Metrics
	c.playout.recorder = deps.Recorder
	return c
}

// ID returns the call id.
func (c *Call) ID() voice.CallID { return c.info.CallID }

// Done is closed when the call has ended and every goroutine has stopped.
func (c *Call) Done() <-chan struct{} { return c.ended }

// Reason is why the call ended; valid after Done.
func (c *Call) Reason() voice.EndReason { return c.reason }

// Hangup ends the call from our side.
func (c *Call) Hangup() { c.cancel() }

// Info describes the call's leg.
func (c *Call) Info() voice.LegInfo { return c.info }

// Journal is the call's journal; safe to record to from any goroutine.
func (c *Call) Journal() *obs.Journal { return c.deps.Journal }

// Transferring tells the call that a transfer to another party is (on) or is no longer
// (off) under way: while it is, the leg ending ends the call as transferred.
func (c *Call) Transferring(on bool) { c.post(transferring{on: on}) }

// End hangs up with reason, as the agent or an operator asked.
func (c *Call) End(reason voice.EndReason) { c.post(endRequested{reason: reason}) }

// Goodbye ends the call for a stopping server: what the agent is saying stops, text is
// said whole, and the call ends (EndShutdown) once the carrier has played it. With text
// empty the call ends at once. It blocks until the call takes the request or is over.
func (c *Call) Goodbye(text string) { c.post(goodbyeRequested{text: text}) }

// post hands an event to the owner loop, giving up when the call is over.
func (c *Call) post(ev any) { c.deliver(ev) }

// inLoop is an event that runs on the owner loop, where the call's state may be read.
type inLoop func()

// deliver is post, reporting whether the event was handed over.
func (c *Call) deliver(ev any) bool {
	select {
	case c.events <- ev:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// goSafe runs f on a tracked goroutine; a panic ends this call, not the process.
func (c *Call) goSafe(where string, f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			if v := recover(); v != nil {
				c.log.Error("panic in call goroutine", "where", where, "panic", v, "stack", string(debug.Stack()))
				c.post(goPanicked{where: where, value: v})
			}
		}()
		f()
	}()
}

// Run runs the call to its end and returns why it ended.
func (c *Call) Run() (reason voice.EndReason) {
	defer close(c.ended)
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("panic in call", "panic", v, "stack", string(debug.Stack()))
			reason = voice.EndInternalError
		}
		c.shutdown(reason)
	}()
	c.start()
	return c.loop()
}

func (c *Call) start() {
	now := c.deps.Clock.Now()
	turnCfg, _ := json.Marshal(c.cfg.Turn)
	c.deps.Journal.Record(now, obs.Event{
		Type: obs.CallStart, Carrier: c.info.Carrier, Direction: string(c.info.Direction),
		CallerHash: c.cfg.CallerHash, Caller: c.cfg.Caller, Attestation: string(c.info.Attestation),
		Agent: c.deps.Agent.Name(), STT: c.deps.STT.Name(), TTS: c.deps.TTS.Name(),
		TurnConfig: turnCfg,
	})
	if c.deps.Recorder != nil {
		c.deps.Recorder.Start(now) // the recording's zero is the call's
	}
	c.vad = c.newVAD()
	c.startSTT(now)
	c.goSafe("leg", func() { c.post(legEnded{err: c.deps.Leg.Run(c.ctx, legSink{c})}) })
	c.goSafe("playout", func() {
		if err := c.playout.run(c.ctx); err != nil {
			c.post(legEnded{err: fmt.Errorf("playout: %w", err)})
		}
	})
	c.step(turn.Input{Kind: turn.CallStarted})
}

// newVAD makes the call's detector; if the configured engine fails, the energy VAD
// stands in so the call can still hear its caller.
func (c *Call) newVAD() vad.Detector {
	d, err := c.deps.NewVAD(c.info.Format.Rate)
	if err == nil {
		return d
	}
	c.log.Error("voice activity detector failed; using the energy detector", "err", err)
	d, err = vad.NewEnergy(vad.EnergyConfig{Rate: c.info.Format.Rate})
	if err != nil {
		panic(err) // the leg's own rate: a bug
	}
	return d
}

// loop is the owner loop: the only place call state changes.
func (c *Call) loop() voice.EndReason {
	for c.endReason == voice.EndUnknown {
		var results <-chan voice.Transcript
		if c.stt != nil {
			results = c.stt.Results()
		}
		select {
		case <-c.ctx.Done():
			return voice.EndShutdown
		case <-c.inbound.Notify():
			c.drainInbound()
		case ev := <-c.events:
			c.handle(ev)
		case tr, ok := <-results:
			if !ok {
				c.sttEnded()
				continue
			}
			c.onTranscript(tr)
		}
	}
	return c.endReason
}

// drainInbound runs every queued caller frame through VAD and on to STT.
func (c *Call) drainInbound() {
	for {
		frame, ok := c.inbound.Pop(c.frame)
		if !ok {
			break
		}
		c.onFrame(frame)
	}
	if c.sendClock != nil {
		c.sendClock.KeepTime()
	}
}

func (c *Call) onFrame(frame []byte) {
	now := c.deps.Clock.Now()
	if !c.gotMedia {
		c.gotMedia = true
		c.deps.Journal.Record(now, obs.Event{Type: obs.MediaFirstIn})
	}
	if c.fsm.ListeningToSTT() {
		c.hearFrame(frame)
	} else {
		c.rescue.Push(frame)
	}
	pcm := decodePCM(c.pcm, frame, c.info.Format.Encoding)
	if c.echo != nil {
		// The VAD hears only what the line's echo path does not explain.
		var f echo.Frame
		pcm, f = c.echo.Process(pcm, c.clean)
		c.noteEcho(now, f)

	}
	c.heard += int64(len(pcm))
	switch c.vad.Process(pcm) {
	case vad.SpeechStart:
		c.deps.Journal.Record(now, obs.Event{Type: obs.VADSpeechStart, AudioMS: c.audioMS()})
		c.step(turn.Input{Kind: turn.SpeechStart})
	case vad.SpeechEnd:
		c.deps.Journal.Record(now, obs.Event{Type: obs.VADSpeechEnd, AudioMS: c.audioMS()})
		c.step(turn.Input{Kind: turn.SpeechEnd})
	}
}

// audioMS is how much of the caller's audio the VAD has heard, in milliseconds.
func (c *Call) audioMS() int64 { return c.heard * 1000 / int64(c.info.Format.Rate) }

// decodePCM turns a frame into linear PCM in dst (sized for the largest frame).
func decodePCM(dst []int16, frame []byte, enc audio.Encoding) []int16 {
	switch enc {
	case audio.Mulaw:
		return g711.DecodeMulaw(dst, frame)
	case audio.Alaw:
		return g711.DecodeAlaw(dst, frame)
	}
	pcm := dst[:len(frame)/2]
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(frame[2*i:]))
	}
	return pcm
}

func (c *Call) onTranscript(tr voice.Transcript) {
	now := c.deps.Clock.Now()
	c.sttSt.heard = true
	if tr.Final {
		c.heardFinal()
		c.lastFinalAt = now
		c.deps.Journal.Record(now, obs.Event{Type: obs.STTFinal, Text: tr.Text})
	} else {
		c.deps.Journal.Record(now, obs.Event{Type: obs.STTPartial, Text: tr.Text})
	}
	c.step(turn.Input{Kind: turn.Transcript, Text: tr.Text, Final: tr.Final})
}

// step feeds the turn machine and carries out what it decides.
func (c *Call) step(in turn.Input) {
	var acts []turn.Action
	c.fsm, acts = turn.Step(c.fsm, in, c.deps.Clock.Now())
	for _, a := range acts {
		c.do(a)
	}
	c.noticeQueued()
	c.flushHeld() // the machine may listen again: audio held for a new recognizer goes first
}

// transcript hands one settled line to the transcript sink.
func (c *Call) transcript(turnN int, role voice.Role, text string, at time.Time, interrupted bool) {
	if c.deps.Transcript == nil || text == "" {
		return
	}
	c.deps.Transcript(store.TranscriptLine{CallID: c.info.CallID, Turn: turnN, Role: role, Text: text, At: at, Interrupted: interrupted})
}

func (c *Call) journalError(typ string, turnN int, err error) { c.journalNamed(typ, turnN, "", err) }

// journalNamed journals err as typ, naming the provider that failed.
func (c *Call) journalNamed(typ string, turnN int, name string, err error) {
	c.deps.Journal.Record(c.deps.Clock.Now(), obs.Event{Type: typ, Turn: turnN, Name: name,
		Kind: voice.KindOf(err).String(), Message: voice.Clip(err.Error(), voice.EchoLimit)})
}

// shutdown stops everything the call started and records its end.
func (c *Call) shutdown(reason voice.EndReason) {
	if c.reply != nil {
		c.reply.cancel()
	}
	for _, t := range c.timers {
		t.Stop()
	}
	c.stopSTTTimers()
	if c.stt != nil {
		_ = c.stt.Close()
	}
	c.cancel()
	c.wg.Wait()
	c.closeOpened()
	if closer, ok := c.vad.(interface{ Close() error }); ok {
		_ = closer.Close()
	}
	if n := c.malformed.Load(); n > 0 {
		c.log.Warn("dropped malformed media frames", "count", n)
		c.deps.Metrics.Malformed(n)
	}
	if d := c.inbound.Dropped(); d > 0 {
		c.log.Warn("dropped inbound frames: engine fell behind", "count", d)
		c.deps.Metrics.InboundDropped(d)
	}
	c.reason = reason
	now := c.deps.Clock.Now()
	c.flushEchoTally(now)
	if text, interrupted, ok := c.history.settled(c.fsm.Turn, now, true); ok {
		c.transcript(c.fsm.Turn, voice.RoleAssistant, text, now, interrupted)
	}
	c.closeRecorder(now)
	c.deps.Journal.Record(now, obs.Event{Type: obs.CallEnd, Reason: reason.String()})
	c.log.Info("call ended", "reason", reason.String())
}

// legSink is how the leg's reader goroutine reaches the call.
type legSink struct{ c *Call }

func (s legSink) Audio(frame []byte) {
	now := s.c.deps.Clock.Now()
	s.c.received(now, len(frame)/s.c.info.Format.Encoding.BytesPerSample())
	if r := s.c.deps.Recorder; r != nil {
		r.Caller(now, frame)
	}
	s.c.inbound.Push(frame)
}
func (s legSink) Mark(name string)  { s.c.post(markEchoed{name: name}) }
func (s legSink) DTMF(digit string) { s.c.post(dtmfPressed{digit: digit}) }
func (s legSink) Malformed(err error) {
	if s.c.malformed.Add(1) <= 10 { // journal the first few; count the rest
		s.c.post(frameMalformed{err: err})
	}
}
