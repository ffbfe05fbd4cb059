package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/bench"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/gateway"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/tts/flite"
)

// benchFlags are `handset bench`'s flags.
type benchFlags struct {
	calls                  int
	duration               time.Duration
	ramp                   float64
	target, secret         string
	carrier                string
	apiToken               string
	inProcess, pin         bool
	vad                    string
	agentLatency, ttsWait  time.Duration
	cpuProfile, memProfile string
	leakProfile            string
	asJSON                 bool
	maxDrift               float64
}

// benchPhrases are what the simulated callers say (and what the fake STT hears).
var benchPhrases = []string{
	"Hi, I would like to check the status of my order.",
	"Can you tell me your opening hours on Saturday?",
	"I need to change the delivery address please.",
	"What is the price of the large one?",
	"Thanks, that is all I needed.",
}

func runBench(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("bench", env)
	var f benchFlags
	fs.IntVar(&f.calls, "calls", 200, "simulated calls to hold at once")
	fs.DurationVar(&f.duration, "duration", 60*time.Second, "how long to hold them once all are up")
	fs.Float64Var(&f.ramp, "ramp", 20, "new calls per second while ramping up")
	fs.StringVar(&f.target, "target", "", "a running Handset's base `URL` to load (default: start one with fake providers)")
	fs.StringVar(&f.carrier, "carrier", "twilio", "the carrier the simulated callers call through: "+strings.Join(simkit.Names(), ", "))
	fs.StringVar(&f.secret, "carrier-secret", "", "with --target: the secret its carrier signs webhooks with (Twilio: TWILIO_AUTH_TOKEN)")
	fs.StringVar(&f.secret, "twilio-token", "", "with --target: the same as --carrier-secret")
	fs.StringVar(&f.apiToken, "token", "", "with --target: its API token (for profiles and memory readings after a collection)")
	fs.BoolVar(&f.inProcess, "in-process", false, "run the Handset under load inside this process (profiles then include the callers)")
	fs.BoolVar(&f.pin, "pin", false, "run the Handset started on CPU 0 and the callers and fakes on the other CPUs (Linux)")
	fs.StringVar(&f.vad, "vad", "energy", "voice activity detector of the Handset started: energy, webrtc or silero")
	fs.DurationVar(&f.agentLatency, "agent-latency", 300*time.Millisecond, "the fake agent's wait before its first token")
	fs.DurationVar(&f.ttsWait, "tts-latency", 80*time.Millisecond, "the fake TTS's wait before its first byte")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write the Handset's CPU profile over the hold to `file`")
	fs.StringVar(&f.memProfile, "memprofile", "", "write the Handset's heap profile at the end of the hold to `file`")
	fs.StringVar(&f.leakProfile, "leakprofile", "", "write the Handset's heap profile after the calls have ended (what they left behind) to `file`")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fs.Float64Var(&f.maxDrift, "max-drift", 0, "a soak: fail unless resident memory and goroutines at the end of the hold are within `PCT` percent of a minute in (needs --duration 2m or more)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: handset bench [--calls N] [--duration D] [--json]")
		fmt.Fprintln(fs.Output(), "\nHolds N simulated calls (through a fake of --carrier) that speak and take turns at real-time pace, against a Handset")
		fmt.Fprintln(fs.Output(), "with fake speech and agent providers, and reports what Handset itself costs per call.")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return &usageError{msg: "bench takes no arguments: " + strings.Join(fs.Args(), " ")}
	case f.maxDrift < 0 || f.maxDrift > 0 && f.duration < 2*time.Minute:
		return &usageError{msg: "--max-drift needs a positive percentage and --duration of 2m or more"}
	case f.calls < 1 || f.duration <= 0 || !(f.ramp > 0) || math.IsInf(f.ramp, 1): // NaN fails every comparison
		return &usageError{msg: "--calls, --duration and --ramp must be positive (and --ramp a finite number)"}
	case f.target != "" && f.carrier == "sip":
		// The simulated trunk calls the SIP listener it picked and gave the Handset it starts;
		// a running Handset's listener is its own.
		return &usageError{msg: "--target with --carrier sip is not supported yet: bench starts the Handset whose SIP listener its trunk calls"}
	case f.target != "" && f.secret == "":
		return &usageError{msg: "--target needs --carrier-secret, or --twilio-token (the target's TWILIO_AUTH_TOKEN)"}
	case f.target != "" && f.inProcess:
		return &usageError{msg: "--target and --in-process exclude each other"}
	case f.pin && (f.target != "" || f.inProcess):
		return &usageError{msg: "--pin applies to the Handset bench starts (not with --target or --in-process)"}
	case f.vad != config.VADEnergy && f.vad != config.VADWebRTC && f.vad != config.VADSilero:
		return &usageError{msg: "--vad " + f.vad + ": one of energy, webrtc, silero"}
	}
	kit, err := simkit.Find(f.carrier)
	if err != nil {
		return &usageError{msg: "--carrier: " + err.Error()}
	}
	cfg, err := loadConfig(env, g, nil)
	if err != nil {
		return err
	}
	warnSettings(newLogger(env.Stderr, cfg), cfg)
	log := newLogger(io.Discard, cfg)
	secret := f.secret
	if f.target == "" {
		secret = randomHex(16)
	}
	vendor, err := kit.Start(ctx, simkit.VendorOptions{Secret: secret, Lean: true, Logger: log})
	if err != nil {
		return err
	}
	defer vendor.Close()
	utterances, audioNote, err := benchSpeech(ctx)
	if err != nil {
		return err
	}
	o := bench.Options{Calls: f.calls, Hold: f.duration, Ramp: f.ramp, Utterances: utterances, Logger: log,
		BaseURL: strings.TrimRight(f.target, "/"), Vendor: vendor, APIToken: f.apiToken}
	if !f.asJSON {
		o.Progress = env.Stderr
	}
	setup := bench.Setup{VAD: f.vad, Audio: audioNote, AgentFirstToken: ms(f.agentLatency), TTSFirstByte: ms(f.ttsWait), Ramp: f.ramp, HistoryLimit: &cfg.Agent.HistoryLimit,
		Recorded: cfg.Record.On}
	stop := func() {}
	switch {
	case f.target != "":
		setup.Mode, setup.VAD, setup.HistoryLimit, setup.Recorded = "target "+f.target, "as configured there", nil, false
	default:
		fakes, stopFakes, err := startBenchFakes(f)
		if err != nil {
			return err
		}
		defer stopFakes()
		if f.inProcess {
			setup.Mode = "in process"
			stop, err = benchInProcess(ctx, env, g, f, fakes, &o, log)
		} else {
			setup.Mode = "child process"
			if f.pin {
				setup.Mode = "child process on CPU 0, callers and fakes on the other CPUs"
			}
			stop, err = benchChild(ctx, env, cfg, f, fakes, &o)
		}
		if err != nil {
			return err
		}
	}
	defer stop()
	for name, dst := range map[string]*io.Writer{f.cpuProfile: &o.CPUProfile, f.memProfile: &o.HeapProfile, f.leakProfile: &o.AfterProfile} {
		if name == "" {
			continue
		}
		file, err := os.Create(name)
		if err != nil {
			return err
		}
		defer file.Close()
		*dst = file
	}
	rep, err := bench.Run(ctx, o)
	rep.Setup = setup
	if err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.Print(env.Stdout)
	}
	if err := rep.Complete(); err != nil {
		fmt.Fprintln(env.Stderr, err)
		return errReported
	}
	if rep.Errors.Total > 0 || rep.CallsHeld < rep.CallsRequested {
		return errReported
	}
	if err := checkDrift(rep.Drift, f.maxDrift); err != nil {
		fmt.Fprintln(env.Stderr, err)
		return errReported
	}
	return nil
}

// checkDrift holds a soak to its limit: memory and goroutines at the end of the hold within
// limit percent of their reading a minute in (0: no check).
func checkDrift(d *bench.Drift, limit float64) error {
	switch {
	case limit == 0:
		return nil
	case d == nil || d.RSSPercent == -1 || d.GoroutinesPercent == -1:
		return errors.New("bench: --max-drift: the hold's drift was not measured (the Handset's readings a minute in failed)")
	case math.Abs(d.RSSPercent) > limit || math.Abs(d.GoroutinesPercent) > limit:
		return fmt.Errorf("bench: drift over the hold beyond %g %%: resident memory %+.1f %%, goroutines %+.1f %%", limit, d.RSSPercent, d.GoroutinesPercent)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchFakes are the fake vendors the Handset under load talks to.
type benchFakes struct {
	deepgram, elevenlabs, agent string // base URLs
	key                         string
}

func startBenchFakes(f benchFlags) (benchFakes, func(), error) {
	key := randomHex(12)
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	var fk benchFakes
	fk.key = key
	for _, srv := range []struct {
		h   http.Handler
		url *string
	}{
		{fakedeepgram.New(fakedeepgram.Options{Key: key, Transcripts: benchPhrases, Lean: true}), &fk.deepgram},
		{fakeelevenlabs.New(fakeelevenlabs.Options{Key: key, FirstByteDelay: f.ttsWait, Lean: true}), &fk.elevenlabs},
		{fakeopenai.New(fakeopenai.Options{Key: key, FirstTokenDelay: f.agentLatency, Lean: true,
			Reply: func([]fakeopenai.Message) string { return "Sure, I can help with that. Is there anything else?" }}), &fk.agent},
	} {
		url, s, err := serveLocal(srv.h)
		if err != nil {
			stop()
			return fk, nil, err
		}
		stops = append(stops, s)
		*srv.url = url
	}
	return fk, stop, nil
}

// benchSettings are the settings of the Handset under load.
// The carrier's come from the bench's fake vendor for publicURL (empty when not yet known).
func benchSettings(f benchFlags, fk benchFakes, vendor simkit.Vendor, publicURL, apiToken, dataDir string) map[string]string {
	settings := map[string]string{
		"HANDSET_DATA_DIR": dataDir, "HANDSET_LOG_LEVEL": "warn",
		"HANDSET_AGENT": config.AgentOpenAI, "HANDSET_AGENT_URL": fk.agent + "/v1", "HANDSET_AGENT_KEY": fk.key,
		"HANDSET_AGENT_MODEL": "bench",
		"HANDSET_STT":         config.STTDeepgram, "HANDSET_DEEPGRAM_URL": fk.deepgram, "DEEPGRAM_API_KEY": fk.key,
		"HANDSET_TTS": config.TTSElevenLabs, "HANDSET_ELEVENLABS_URL": fk.elevenlabs, "ELEVENLABS_API_KEY": fk.key,
		"HANDSET_VAD": f.vad, "HANDSET_API_TOKEN": apiToken,
		"HANDSET_FIRST_MESSAGE": "Hello, how can I help?", "HANDSET_MAX_CALLS": strconv.Itoa(f.calls + 50),
		// Callers pause between turns and never go quiet for long; no re-prompts mid-bench.
		"HANDSET_SILENCE_REPROMPT": "0s", "HANDSET_SILENCE_HANGUP": "0s",
	}
	maps.Copy(settings, settingsMap(vendor.Settings(publicURL)))
	return settings
}

// benchChild starts `handset serve` (this very binary) as a separate process, so what is
// measured is Handset alone, not the callers and fakes.
func benchChild(ctx context.Context, env Env, cfg *config.Config, f benchFlags, fk benchFakes, o *bench.Options) (func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "handset-bench-")
	if err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	o.APIToken, o.BaseURL = randomHex(16), "http://"+addr
	o.JournalDir = filepath.Join(dir, "data", "calls")
	settings := benchSettings(f, fk, o.Vendor, o.BaseURL, o.APIToken, filepath.Join(dir, "data"))
	settings["HANDSET_LISTEN"] = addr
	if cfg.EnginesDir != "" {
		settings["HANDSET_ENGINES_DIR"] = cfg.EnginesDir
	}
	// The one setting of yours the load keeps: how much of each call's history is held.
	settings["HANDSET_AGENT_HISTORY_LIMIT"] = strconv.Itoa(cfg.Agent.HistoryLimit)
	// And whether calls are recorded, so HANDSET_RECORD=true measures what recording costs.
	settings["HANDSET_RECORD"] = strconv.FormatBool(cfg.Record.On)
	cmd := exec.Command(exe, "serve")
	cmd.Dir = env.WorkDir
	cmd.Env = benchChildEnv(dir, settings, os.LookupEnv)
	logPath := filepath.Join(dir, "handset.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start handset serve: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = os.RemoveAll(dir)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get(o.BaseURL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if f.pin {
					if err := pinApart(cmd.Process.Pid); err != nil {
						stop()
						return nil, err
					}
				}
				return stop, nil
			}
		}
		select {
		case err := <-exited:
			tail, _ := os.ReadFile(logPath)
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("the Handset under load exited (%v):\n%s", err, tail)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return nil, fmt.Errorf("the Handset under load did not become ready within 30 s")
		}
	}
}

// benchInProcess runs the Handset under load in this process.
func benchInProcess(ctx context.Context, env Env, g *globals, f benchFlags, fk benchFakes, o *bench.Options, log *slog.Logger) (func(), error) {
	dir, err := os.MkdirTemp("", "handset-bench-")
	if err != nil {
		return nil, err
	}
	o.APIToken = randomHex(16)
	o.JournalDir = filepath.Join(dir, "data", "calls")
	cfg, err := loadConfig(env, g, benchSettings(f, fk, o.Vendor, "", o.APIToken, filepath.Join(dir, "data")))
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	gw, err := gateway.Open(sctx, cfg, gateway.Options{Logger: log, Listen: "127.0.0.1:0"})
	if err != nil {
		cancel()
		return nil, err
	}
	o.BaseURL = "http://" + gw.Addr().String()
	served := make(chan error, 1)
	go func() { served <- gw.Serve(sctx, nil) }()
	return func() {
		cancel()
		<-served
		gw.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// benchSpeech is what the callers say: the phrases spoken by flite when it is linked in,
// else speech-shaped sound, as 8 kHz mu-law with a little silence around each.
func benchSpeech(ctx context.Context) ([][]byte, string, error) {
	if flite.Available() {
		tts, err := flite.New(flite.Options{Voice8k: "kal"})
		if err == nil {
			var out [][]byte
			for _, p := range benchPhrases {
				r, err := tts.Synthesize(ctx, p, audio.Telephone)
				if err != nil {
					return nil, "", err
				}
				clip, err := io.ReadAll(r)
				r.Close()
				if err != nil {
					return nil, "", err
				}
				out = append(out, clip)
			}
			return out, fmt.Sprintf("%d phrases spoken by flite (kal, 8 kHz)", len(out)), nil
		}
	}
	var out [][]byte
	for i := range benchPhrases {
		out = append(out, audiotest.Mulaw(audiotest.SpeechLike(8000, 1500*time.Millisecond+time.Duration(i)*200*time.Millisecond, int64(i+1))))
	}
	return out, fmt.Sprintf("%d speech-shaped clips (flite is not linked into this build)", len(out)), nil
}

// benchChildEnv is the environment of the Handset bench starts: the load's settings, a home
// of its own, and, from bench's environment, only PATH and the Go runtime's settings
// (GOGC, GOMEMLIMIT, GODEBUG), which are how a deployment tunes its memory and collector.
func benchChildEnv(home string, settings map[string]string, lookup func(string) (string, bool)) []string {
	path, _ := lookup("PATH")
	env := []string{"PATH=" + path, "HOME=" + home}
	for _, name := range []string{"GOGC", "GOMEMLIMIT", "GODEBUG"} {
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	for k, v := range settings {
		env = append(env, k+"="+v)
	}
	return env
}
