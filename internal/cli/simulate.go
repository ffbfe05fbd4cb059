package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/resample"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/engines"
	"github.com/handset-voice/handset/internal/gateway"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

type simulateFlags struct {
	says        stringList
	audioFile   string
	asJSON      bool
	turnTimeout time.Duration
	carrier     string
}

func runSimulate(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("simulate", env)
	var f simulateFlags
	fs.Var(&f.says, "say", "a caller turn, as `text` (repeatable, in order)")
	fs.StringVar(&f.audioFile, "audio", "", "the caller's audio as a `WAV` file (PCM16, mu-law or A-law, any rate)")
	fs.BoolVar(&f.asJSON, "json", false, "print a JSON report instead of text")
	fs.DurationVar(&f.turnTimeout, "turn-timeout", 2*time.Minute, "how long to wait for each reply")
	fs.StringVar(&f.carrier, "carrier", "twilio", "the carrier the simulated caller calls through (a fake of it): "+strings.Join(simkit.Names(), ", "))
	if err := parse(fs, args); err != nil {
		return err
	}
	if (len(f.says) == 0) == (f.audioFile == "") {
		return &usageError{msg: "give the caller's turns with --say TEXT (repeatable) or --audio FILE.wav", hint: `handset simulate --say "what are your opening hours"`}
	}
	kit, err := simkit.Find(f.carrier)
	if err != nil {
		return &usageError{msg: "--carrier: " + err.Error()}
	}
	// The call goes through a fake of the carrier: its settings replace the real account's.
	vendor, err := kit.Start(ctx, simkit.VendorOptions{})
	if err != nil {
		return err
	}
	defer vendor.Close()
	cfg, err := loadConfig(env, g, settingsMap(vendor.Settings("")))
	if err != nil {
		return err
	}
	warnSettings(newLogger(env.Stderr, cfg), cfg)
	if cfg.Agent.Runtime == "" {
		cfg.Agent.Runtime = config.AgentEcho
	}
	if err := cfg.Validate(config.ValidateOptions{}); err != nil {
		return err
	}
	log := newLogger(env.Stderr, cfg)
	if g.logLevel == "" && cfg.Log.Level == "info" {
		log = slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	report, err := simulate(ctx, cfg, f, vendor, log)
	if err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		report.print(env.Stdout)
	}
	if f.audioFile != "" && len(report.Turns) == 0 {
		return fmt.Errorf("--audio %s was not recognised: the STT (%s) heard no caller turn in it (the journal shows what it heard)\n"+
			"  fix: check that the file holds speech, in the language the STT expects; `handset trace` reads the journal", f.audioFile, report.STT)
	}
	return nil
}

// simulateReport is what simulate prints.
type simulateReport struct {
	CallID   string            `json:"call_id"`
	Journal  string            `json:"journal"`
	Agent    string            `json:"agent"`
	STT      string            `json:"stt"`                // what heard the caller
	STTNote  string            `json:"stt_note,omitempty"` // why that one
	Greeting string            `json:"greeting,omitempty"`
	Turns    []obs.TurnSummary `json:"turns"`
}

func (r simulateReport) print(w io.Writer) {
	fmt.Fprintf(w, "call %s with agent %s (journal: %s)\n", r.CallID, r.Agent, r.Journal)
	if r.STTNote != "" {
		fmt.Fprintf(w, "speech to text: %s\n", r.STTNote)
	}
	if r.Greeting != "" {
		fmt.Fprintf(w, "greeting: %s\n", r.Greeting)
	}
	for _, t := range r.Turns {
		fmt.Fprintf(w, "\nturn %d\n  caller: %s\n", t.Turn, t.Caller)
		switch {
		case t.Error != "":
			fmt.Fprintf(w, "  agent failed: %s\n", t.Error)
		default:
			fmt.Fprintf(w, "  agent:  %s\n", t.Reply)
		}
		if t.InputTokens > 0 || t.OutputTokens > 0 {
			fmt.Fprintf(w, "  tokens: %s in, %s out (as the runtime reported them)\n", countOrDash(t.InputTokens), countOrDash(t.OutputTokens))
		}
		if t.FillerMS >= 0 {
			fmt.Fprintf(w, "  filler: %s to the long-turn filler's first audio\n", msOrDash(t.FillerMS))
		}
		fmt.Fprintf(w, "  latency: %s to the reply's first audio (agent first token %s, TTS first byte %s, Handset %s)\n",
			msOrDash(t.ResponseMS), msOrDash(t.AgentTTFTMS), msOrDash(t.TTSTTFBMS), msOrDash(t.OverheadMS))
	}
}

func countOrDash(n int) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func msOrDash(ms float64) string {
	if ms < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", ms)
}

// settingsMap is KEY=VALUE lines as a map.
func settingsMap(lines []string) map[string]string {
	m := make(map[string]string, len(lines))
	for _, kv := range lines {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// simulate runs one call: the configured agent behind the real engine, a simulated caller
// through vendor (a fake carrier), and fake speech services (or the configured STT for
// --audio).
func simulate(ctx context.Context, cfg *config.Config, f simulateFlags, vendor simkit.Vendor, log *slog.Logger) (simulateReport, error) {
	var rep simulateReport
	if f.audioFile != "" && cfg.STT.Provider == "" {
		note, err := offlineAudioSTT(cfg)
		if err != nil {
			return rep, err
		}
		rep.STTNote = note
	}
	stopFakes, err := useFakeSpeech(cfg, f, log)
	if err != nil {
		return rep, err
	}
	defer stopFakes()
	cfg.PublicURL = ""
	if cfg.VAD.Engine == "" && f.audioFile == "" {
		// --say callers are synthetic speech-like sound, which a neural VAD rightly does
		// not call speech; the energy detector hears them.
		cfg.VAD.Engine = config.VADEnergy
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	started := make(chan *call.Call, 1)
	watch := newCallWatch()
	gw, err := gateway.Open(sctx, cfg, gateway.Options{Logger: log, Listen: "127.0.0.1:0", OnCall: func(c *call.Call) {
		c.Journal().Tee(watch.observe)
		started <- c
	}})
	if err != nil {
		return rep, err
	}
	defer gw.Close()
	served := make(chan error, 1)
	go func() { served <- gw.Serve(sctx, nil) }()
	defer func() { stop(); <-served }()

	caller, err := vendor.Call(ctx, "http://"+gw.Addr().String(), simkit.CallOptions{})
	if err != nil {
		return rep, fmt.Errorf("simulated caller: %w", err)
	}
	c := <-started
	if err := converse(ctx, caller, cfg, f, watch); err != nil {
		_ = caller.Hangup()
		return rep, err
	}
	_ = caller.Hangup()
	<-c.Done()
	rep.CallID = string(c.ID())
	rep.Journal = filepath.Join(obs.Dir(cfg.DataDir, rep.CallID), "events.jsonl")
	rep.Agent = gw.AgentName()
	rep.STT = cfg.STT.Provider
	rep.Greeting = cfg.Messages.First
	events, err := obs.ReadFile(rep.Journal)
	if err != nil {
		return rep, err
	}
	rep.Turns = obs.Turns(events)
	return rep, nil
}

// converse plays the caller's side: wait for the greeting, then each turn and its reply.
func converse(ctx context.Context, caller phone.Phone, cfg *config.Config, f simulateFlags, watch *callWatch) error {
	if cfg.Messages.First != "" {
		if err := waitPlayed(ctx, caller, 0, 1, f.turnTimeout); err != nil {
			return fmt.Errorf("greeting: %w", err)
		}
	}
	if f.audioFile != "" {
		mulaw, err := loadCallerAudio(f.audioFile)
		if err != nil {
			return err
		}
		if err := caller.SayAndWait(ctx, mulaw); err != nil {
			return err
		}
		watch.touch() // quiet is counted from the end of the file
		return watch.wait(ctx, caller, 2500*time.Millisecond, f.turnTimeout)
	}
	greeting := 0
	if cfg.Messages.First != "" {
		greeting = 1
	}
	for i, text := range f.says {
		if err := caller.SayAndWait(ctx, speechFor(text, int64(i))); err != nil {
			return err
		}
		if err := waitPlayed(ctx, caller, i+1, i+1+greeting, f.turnTimeout); err != nil {
			return fmt.Errorf("turn %d (%q): %w", i+1, text, err)
		}
	}
	return nil
}

// waitPlayed waits until the carrier played the end of turn n (or a later one): its
// "t<N>-end" mark on a media stream, or on an audio-only line (SIP), which carries no
// marks, the end of the replies-th reply the phone heard in the audio (phone.ReplyEnded).
func waitPlayed(ctx context.Context, caller phone.Phone, n, replies int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := caller.WaitFor(ctx, func(s phone.Snapshot) bool {
		for _, e := range s.Filter(phone.MarkEchoed) {
			var t int
			if _, err := fmt.Sscanf(e.Name, "t%d-end", &t); err == nil && t >= n && !e.Cleared {
				return true
			}
		}
		return s.ReplyEnds() >= replies || s.Ended
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no reply within %s", timeout)
	}
	return err
}

// callWatch follows a call's journal to tell when it has settled after the caller's
// audio: the caller is not speaking, no committed turn is still being answered, and
// nothing has happened for a while.
type callWatch struct {
	mu       sync.Mutex
	speaking bool
	open     int // the committed turn not yet played or interrupted; 0 for none
	last     time.Time
}

func newCallWatch() *callWatch { return &callWatch{last: time.Now()} }

// observe is the journal's tee: it runs under the journal's lock, so it only records.
func (w *callWatch) observe(e obs.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = time.Now()
	switch e.Type {
	case obs.VADSpeechStart:
		w.speaking = true
	case obs.VADSpeechEnd:
		w.speaking = false
	case obs.TurnCommit:
		w.open = e.Turn
	case obs.PlayoutDone, obs.TurnInterrupted:
		if e.Turn >= w.open {
			w.open = 0
		}
	}
}

func (w *callWatch) touch() {
	w.mu.Lock()
	w.last = time.Now()
	w.mu.Unlock()
}

func (w *callWatch) settled(quiet time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.speaking && w.open == 0 && time.Since(w.last) >= quiet
}

// wait returns once the call has settled for quiet, or ended.
func (w *callWatch) wait(ctx context.Context, caller phone.Phone, quiet, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !w.settled(quiet) && !caller.Snapshot().Ended {
		if time.Now().After(deadline) {
			return fmt.Errorf("the call did not settle within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// speechFor makes speech-like caller audio about as long as saying text would take.
func speechFor(text string, seed int64) []byte {
	d := time.Duration(len(text)) * 65 * time.Millisecond
	d = min(max(d, 700*time.Millisecond), 8*time.Second)
	return audiotest.Mulaw(audiotest.SpeechLike(8000, d, seed))
}

// loadCallerAudio reads a WAV file as 8 kHz mu-law, the phone format.
func loadCallerAudio(path string) ([]byte, error) {
	format, data, err := wav.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--audio %s: %w", path, err)
	}
	if format == audio.Telephone {
		return data, nil
	}
	var pcm []int16
	switch format.Encoding {
	case audio.Mulaw:
		pcm = g711.DecodeMulaw(make([]int16, len(data)), data)
	case audio.Alaw:
		pcm = g711.DecodeAlaw(make([]int16, len(data)), data)
	default:
		pcm = make([]int16, len(data)/2)
		for i := range pcm {
			pcm[i] = int16(uint16(data[2*i]) | uint16(data[2*i+1])<<8)
		}
	}
	if format.Rate != 8000 {
		r, err := resample.New(format.Rate, 8000)
		if err != nil {
			return nil, fmt.Errorf("--audio %s: %w", path, err)
		}
		pcm = r.Process(make([]int16, r.MaxOut(len(pcm))), pcm)
	}
	return g711.EncodeMulaw(make([]byte, len(pcm)), pcm), nil
}

// offlineAudioSTT sets cfg to hear --audio with sphinx, the offline recogniser, when this
// binary can run it; HANDSET_STT is not set, and the fake STT cannot hear a file. It
// returns a note saying so, or what to do.
func offlineAudioSTT(cfg *config.Config) (string, error) {
	for _, e := range engines.List(cfg) {
		if e.Name == config.STTSphinx && e.Problem != "" {
			return "", fmt.Errorf("--audio needs a speech recogniser to hear the file: HANDSET_STT is not set, and this binary cannot run the offline one\n"+
				"  sphinx: %s\n  or: set HANDSET_STT=deepgram with DEEPGRAM_API_KEY (or HANDSET_STT=openai) to hear it with a cloud recogniser", e.Problem)
		}
	}
	cfg.STT.Provider = config.STTSphinx
	cfg.STT.Sphinx.Decoders = 1 // one caller
	return "sphinx (offline, demo quality), since HANDSET_STT is not set; set it to hear the file with another", nil
}

// useFakeSpeech points STT and TTS at in-process fakes that speak the vendors' protocols.
// With --audio and a configured STT, the real STT hears the file.
func useFakeSpeech(cfg *config.Config, f simulateFlags, log *slog.Logger) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	if f.audioFile == "" || cfg.STT.Provider == "" {
		url, s, err := serveLocal(fakedeepgram.New(fakedeepgram.Options{Transcripts: f.says, Logger: log}))
		if err != nil {
			return stop, err
		}
		stops = append(stops, s)
		cfg.STT.Provider, cfg.STT.Deepgram.URL, cfg.STT.Deepgram.Key = config.STTDeepgram, url, config.NewSecret("simulate")
	}
	url, s, err := serveLocal(fakeelevenlabs.New(fakeelevenlabs.Options{Logger: log}))
	if err != nil {
		return stop, err
	}
	stops = append(stops, s)
	cfg.TTS.Provider, cfg.TTS.ElevenLabs.URL, cfg.TTS.ElevenLabs.Key = config.TTSElevenLabs, url, config.NewSecret("simulate")
	return stop, nil
}

// serveLocal serves h on a loopback port and returns its base URL.
func serveLocal(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { _ = hs.Serve(ln); close(done) }()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
		<-done
	}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
