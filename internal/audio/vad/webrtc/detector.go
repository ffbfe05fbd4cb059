package webrtc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/handset-voice/handset/internal/audio/vad"
)

// Mode is libfvad's aggressiveness: higher modes call less audio speech, which cuts false
// alarms in noise and costs missed soft speech.
type Mode uint8

// Modes. ModeDefault (the zero value) means DefaultMode; the others are libfvad modes 0-3.
const (
	ModeDefault        Mode = iota
	ModeQuality             // libfvad mode 0
	ModeLowBitrate          // libfvad mode 1
	ModeAggressive          // libfvad mode 2
	ModeVeryAggressive      // libfvad mode 3
)

// DefaultMode is the mode of a zero Config: mode 3. On the vadtest track (real speech,
// 10 ms frames) it has the best clean-speech frame F1 at 16 kHz and 8 kHz mu-law (0.93
// and 0.94 against 0.89-0.92 for modes 0-2, whose extra recall is bought with two to
// three times the false alarms in pauses) and the fewest false alarms in white and pink
// noise down to 10 dB SNR. No mode copes below that: at 5 dB pink and 0 dB white noise
// every mode calls nearly every frame speech.
const DefaultMode = ModeVeryAggressive

// LibfvadMode is the Mode for libfvad's mode number n, 0 to 3; any other n gives a Mode
// NewDetector rejects.
func LibfvadMode(n int) Mode {
	if n < 0 || n > 3 {
		return ModeVeryAggressive + 1
	}
	return Mode(n + 1)
}

func (m Mode) String() string {
	switch m {
	case ModeDefault:
		return "default"
	case ModeQuality:
		return "quality"
	case ModeLowBitrate:
		return "low-bitrate"
	case ModeAggressive:
		return "aggressive"
	case ModeVeryAggressive:
		return "very-aggressive"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// Config tunes a Detector. Zero fields take the defaults named below.
type Config struct {
	// Rate is the sample rate of the frames in Hz: 8000, 16000, 32000 or 48000. Required.
	Rate int
	// Mode is libfvad's aggressiveness (default DefaultMode).
	Mode Mode
	// Frame is how much audio libfvad classifies at a time: 10, 20 or 30 ms (default
	// 10 ms). libfvad adapts its noise model once per frame, so shorter frames track
	// noise faster: in pink noise at 10 dB SNR, mode 3 calls 10% of non-speech frames
	// speech with 10 ms frames, 24% with 20 ms and 58% with 30 ms.
	Frame time.Duration
	// StartAfter is how long frames must stay speech before SpeechStart (default 100 ms).
	StartAfter time.Duration
	// EndAfter is how long frames must stay non-speech before SpeechEnd (default 500 ms).
	EndAfter time.Duration
}

// Defaults for Config's zero fields.
const (
	DefaultFrame      = 10 * time.Millisecond
	DefaultStartAfter = vad.DefaultStartAfter
	DefaultEndAfter   = vad.DefaultEndAfter
)

// ErrClosed is reported (see Detector.Err) by a detector used after Close or after its
// Engine was closed.
var ErrClosed = errors.New("webrtc: detector closed")

func (c Config) withDefaults() (Config, error) {
	switch c.Rate {
	case 8000, 16000, 32000, 48000:
	default:
		return c, fmt.Errorf("webrtc: sample rate %d Hz: libfvad takes 8000, 16000, 32000 or 48000", c.Rate)
	}
	if c.Mode > ModeVeryAggressive {
		return c, fmt.Errorf("webrtc: %v: want ModeQuality, ModeLowBitrate, ModeAggressive or ModeVeryAggressive", c.Mode)
	}
	if c.Mode == ModeDefault {
		c.Mode = DefaultMode
	}
	switch c.Frame {
	case 0:
		c.Frame = DefaultFrame
	case 10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond:
	default:
		return c, fmt.Errorf("webrtc: frame %v: libfvad takes 10, 20 or 30 ms", c.Frame)
	}
	if c.StartAfter < 0 || c.EndAfter < 0 {
		return c, errors.New("webrtc: StartAfter and EndAfter must not be negative")
	}
	if c.StartAfter == 0 {
		c.StartAfter = DefaultStartAfter
	}
	if c.EndAfter == 0 {
		c.EndAfter = DefaultEndAfter
	}
	return c, nil
}

func samples(rate int, d time.Duration) int {
	return int(int64(d) * int64(rate) / int64(time.Second))
}

// Detector is the WebRTC VAD behind vad.Detector. It classifies each Config.Frame of audio
// with libfvad and reports SpeechStart after StartAfter of consecutive speech frames and
// SpeechEnd after EndAfter of consecutive non-speech frames; timing is counted in samples,
// so Process takes frames of any length, buffering a partial libfvad frame until the next
// call. It does not allocate per frame. It is not safe for concurrent use.
type Detector struct {
	cfg        Config
	mod        api.Module
	process    api.Function
	reset      api.Function
	setMode    api.Function
	setRate    api.Function
	inst       uint32 // Fvad* inside the instance
	buf        uint32 // malloc'd frame buffer inside the instance
	stack      []uint64
	frameLen   int     // samples per libfvad frame
	partial    []int16 // buffered samples of the next frame
	startAfter int     // samples
	endAfter   int     // samples

	raw      bool // libfvad's decision for the last frame
	speaking bool // the hysteresis state, which may run ahead of inSpeech
	run      int  // samples of the state-changing kind in a row
	pending  int  // transitions decided but not yet reported
	inSpeech bool // the last reported transition was SpeechStart
	err      error
}

var _ vad.Detector = (*Detector)(nil)

// NewDetector instantiates fvad.wasm for one stream at cfg.Rate. Each detector has its own
// module instance (see Memory); Close it when the stream ends. It fails for a bad Config
// or when the instance cannot be created.
func (e *Engine) NewDetector(cfg Config) (*Detector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if e.closed.Load() {
		return nil, ErrClosed
	}
	ctx := context.Background()
	mod, err := e.rt.InstantiateModule(ctx, e.compiled, e.moduleConfig())
	if err != nil {
		return nil, fmt.Errorf("webrtc: instantiate fvad.wasm: %w", err)
	}
	d := &Detector{
		cfg:        cfg,
		mod:        mod,
		process:    mod.ExportedFunction(exportProcess),
		reset:      mod.ExportedFunction(exportReset),
		setMode:    mod.ExportedFunction(exportSetMode),
		setRate:    mod.ExportedFunction(exportSetRate),
		stack:      make([]uint64, 3),
		frameLen:   samples(cfg.Rate, cfg.Frame),
		startAfter: max(1, samples(cfg.Rate, cfg.StartAfter)),
		endAfter:   max(1, samples(cfg.Rate, cfg.EndAfter)),
	}
	d.partial = make([]int16, 0, d.frameLen)
	if err := d.setup(mod); err != nil {
		_ = mod.Close(ctx)
		return nil, err
	}
	return d, nil
}

// setup creates the fvad instance, sets its mode and rate and mallocs the frame buffer.
func (d *Detector) setup(mod api.Module) error {
	r, err := d.call(mod.ExportedFunction(exportNew))
	if err != nil || r == 0 {
		return fmt.Errorf("webrtc: fvad_new failed (%v)", err)
	}
	d.inst = uint32(r)
	if err := d.configure(); err != nil {
		return err
	}
	r, err = d.call(mod.ExportedFunction(exportMalloc), uint64(2*d.frameLen))
	if err != nil || r == 0 {
		return fmt.Errorf("webrtc: malloc of the frame buffer failed (%v)", err)
	}
	d.buf = uint32(r)
	return nil
}

// configure sets the instance's mode and sample rate (after creation and after fvad_reset,
// which returns both to libfvad's defaults).
func (d *Detector) configure() error {
	if r, err := d.call(d.setMode, uint64(d.inst), uint64(d.cfg.Mode-1)); err != nil || int32(r) != 0 {
		return fmt.Errorf("webrtc: fvad_set_mode(%d) failed (%v)", d.cfg.Mode-1, err)
	}
	if r, err := d.call(d.setRate, uint64(d.inst), uint64(d.cfg.Rate)); err != nil || int32(r) != 0 {
		return fmt.Errorf("webrtc: fvad_set_sample_rate(%d) failed (%v)", d.cfg.Rate, err)
	}
	return nil
}

// call runs f with params on the reused stack and returns its first result (0 if none).
func (d *Detector) call(f api.Function, params ...uint64) (uint64, error) {
	copy(d.stack, params)
	if err := f.CallWithStack(context.Background(), d.stack); err != nil {
		return 0, err
	}
	return d.stack[0], nil
}

// Config is the configuration in use, defaults filled in.
func (d *Detector) Config() Config { return d.cfg }

// SampleRate is the rate of the frames Process expects, in Hz.
func (d *Detector) SampleRate() int { return d.cfg.Rate }

// InSpeech reports whether the last transition reported was SpeechStart.
func (d *Detector) InSpeech() bool { return d.inSpeech }

// RawSpeech is libfvad's decision for the last whole frame it classified, before the
// start/end hysteresis (false before the first). For traces and accuracy tests.
func (d *Detector) RawSpeech() bool { return d.raw }

// Err is the first failure of the wasm engine (a trap, a closed detector or Engine), or nil.
// After a failure the detector classifies nothing more: Process reports the SpeechEnd that
// closes speech in progress, then None.
func (d *Detector) Err() error { return d.err }

// Memory is the size in bytes of this detector's wasm linear memory, which is most of what
// a detector costs (the rest is a few KiB of wazero bookkeeping).
func (d *Detector) Memory() int {
	if d.mod.IsClosed() {
		return 0
	}
	return int(d.mod.Memory().Size())
}

// Process classifies the next samples (at SampleRate) and reports a transition, if any. It
// reports at most one per call: when one call's audio holds more (only possible for calls
// longer than StartAfter or EndAfter) the rest are reported by the following calls.
func (d *Detector) Process(frame []int16) vad.Event {
	for len(frame) > 0 && d.err == nil {
		if len(d.partial) == 0 && len(frame) >= d.frameLen {
			d.classify(frame[:d.frameLen])
			frame = frame[d.frameLen:]
			continue
		}
		n := min(len(frame), d.frameLen-len(d.partial))
		d.partial = append(d.partial, frame[:n]...)
		frame = frame[n:]
		if len(d.partial) == d.frameLen {
			d.classify(d.partial)
			d.partial = d.partial[:0]
		}
	}
	if d.pending == 0 {
		return vad.None
	}
	d.pending--
	d.inSpeech = !d.inSpeech
	if d.inSpeech {
		return vad.SpeechStart
	}
	return vad.SpeechEnd
}

// classify runs libfvad on one whole frame and advances the hysteresis.
func (d *Detector) classify(frame []int16) {
	mem, ok := d.mod.Memory().Read(d.buf, uint32(2*len(frame)))
	if !ok {
		d.fail(errors.New("webrtc: frame buffer outside linear memory"))
		return
	}
	for i, s := range frame {
		binary.LittleEndian.PutUint16(mem[2*i:], uint16(s))
	}
	r, err := d.call(d.process, uint64(d.inst), uint64(d.buf), uint64(len(frame)))
	if err != nil {
		if d.mod.IsClosed() {
			err = ErrClosed // the Engine was closed under the detector
		}
		d.fail(fmt.Errorf("webrtc: fvad_process: %w", err))
		return
	}
	if int32(r) < 0 {
		d.fail(fmt.Errorf("webrtc: fvad_process rejected a frame of %d samples at %d Hz", len(frame), d.cfg.Rate))
		return
	}
	d.raw = r == 1
	if d.raw != d.speaking {
		d.run += len(frame)
	} else {
		d.run = 0
	}
	if (!d.speaking && d.run >= d.startAfter) || (d.speaking && d.run >= d.endAfter) {
		d.speaking, d.run = !d.speaking, 0
		d.pending++
	}
}

// fail records the first engine failure and leaves the detector ending any speech.
func (d *Detector) fail(err error) {
	if d.err != nil {
		return
	}
	d.err = err
	d.raw, d.run = false, 0
	// Whatever was pending nets out to "not speaking": report one SpeechEnd if the caller
	// believes speech is in progress, nothing otherwise.
	d.speaking = false
	d.pending = 0
	if d.inSpeech {
		d.pending = 1
	}
}

// Reset returns to silence without reporting SpeechEnd: the hysteresis, the buffered
// partial frame and any unreported transition are dropped, and fvad_reset reinitialises
// libfvad (then the mode and rate are set again). That drops libfvad's adapted noise
// model, which vad.Detector would have a Reset keep, but it also drops libfvad's own
// hangover, and that matters more: on the vadtest track with a Reset every second, keeping
// libfvad's state let its hangover restart speech just after a Reset in 7 of 47 starts on
// clean audio and 7 of 45 in pink noise at 10 dB SNR, against 0 and 4 with fvad_reset.
func (d *Detector) Reset() {
	d.partial = d.partial[:0]
	d.raw, d.speaking, d.inSpeech = false, false, false
	d.run, d.pending = 0, 0
	if d.err != nil {
		return
	}
	if _, err := d.call(d.reset, uint64(d.inst)); err != nil {
		d.fail(fmt.Errorf("webrtc: fvad_reset: %w", err))
		return
	}
	if err := d.configure(); err != nil {
		d.fail(err)
	}
}

// Close frees the module instance; the detector reports ErrClosed afterwards. Idempotent.
func (d *Detector) Close() error {
	if errors.Is(d.err, ErrClosed) {
		return nil
	}
	d.fail(ErrClosed)
	d.err = ErrClosed
	d.pending, d.inSpeech = 0, false
	return d.mod.Close(context.Background())
}
