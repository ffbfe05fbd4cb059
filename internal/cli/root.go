// Package cli is Handset's command line: one file per subcommand, each parsing its flags,
// printing, and running what it asks for; the gateway application itself is
// internal/gateway.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/handset-voice/handset/internal/config"
)

// Env is what a command may touch of the outside world, so tests can run commands
// in-process with their own environment and output.
type Env struct {
	Stdout, Stderr io.Writer
	Environ        []string // os.Environ() form
	WorkDir        string
	// Ready, when set, is told the address a server is listening on.
	Ready func(addr string)
}

// System is the real process environment.
func System() Env {
	wd, _ := os.Getwd()
	return Env{Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ(), WorkDir: wd}
}

type command struct {
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

var commands = map[string]command{
	"serve":         {"Run the gateway: carrier webhooks and media streams, browser calls, API.", runServe},
	"demo":          {"Try Handset with no keys: offline speech, the browser call page, a local agent.", runDemo},
	"agents":        {"OpenClaw: the gateway's agents and which one Handset would use.", runAgents},
	"numbers":       {"The carrier account's numbers and where their voice webhooks point.", runNumbers},
	"attach-number": {"Point a carrier number's voice webhook at this Handset.", runAttachNumber},
	"setup":         {"Scaffold a ready-to-run project for Hermes, OpenClaw or an OpenAI-compatible runtime.", runSetup},
	"doctor":        {"Check everything configured; each problem comes with its fix.", runDoctor},
	"trace":         {"Stage-by-stage view of a call with per-turn latencies.", runTrace},
	"diagnose":      {"Names the first broken stage of a call and the fix.", runDiagnose},
	"test":          {"One real turn through the agent runtime, and the TTS and STT heard end to end.", runTest},
	"simulate":      {"A whole call in the terminal through the real engine.", runSimulate},
	"version":       {"Version, commit, build tags, and where the engine files were found.", runVersion},
	"install":       {"Copy this binary and its engine files under a prefix (default /usr/local).", runInstall},
	"call":          {"Place an outbound call, or work through a list of numbers (queued as jobs).", runCall},
	"bridge":        {"Serve only the agent bridge: the runtime as an OpenAI-compatible LLM for other voice platforms.", runBridge},
	"bench":         {"Load test: N simulated callers against Handset with fake providers; latency, jitter, CPU and memory per call.", runBench},
}

// errReported: the command has printed its findings itself; exit 1 with no more words.
var errReported = errors.New("problems reported above")

// usageError is a mistake in how a command was called: exit code 2, with a hint.
type usageError struct{ msg, hint string }

func (e *usageError) Error() string { return e.msg }

// Hint says what to do about it.
func (e *usageError) Hint() string { return e.hint }

// hinted is a mistake to fix before running again, with what to do: a usageError, or a
// setting the gateway cannot use. Main exits 2 for both.
type hinted interface {
	error
	Hint() string
}

// Main runs the command line and returns the exit code: 0 success, 1 failure, 2 usage.
func Main(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(env.Stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	name, rest := args[0], args[1:]
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(env.Stderr, "handset: unknown command %q\n", name)
		if planned[name] {
			fmt.Fprintf(env.Stderr, "hint: %q is not in this version yet\n", name)
		} else {
			fmt.Fprintln(env.Stderr, "hint: run `handset help` for the list of commands")
		}
		return 2
	}
	err := cmd.run(ctx, env, rest)
	var ue hinted
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errReported):
		return 1
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "handset %s: %s\n", name, ue.Error())
		if h := ue.Hint(); h != "" {
			fmt.Fprintf(env.Stderr, "hint: %s\n", h)
		}
		return 2
	default:
		fmt.Fprintf(env.Stderr, "handset %s: %s\n", name, err)
		return 1
	}
}

// planned are INTERFACE.md commands that later versions add.
var planned = map[string]bool{}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "handset gives an AI agent runtime a phone number and a voice.")
	fmt.Fprintln(w, "\nUsage: handset <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0 // the longest name, so every summary starts in one column
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nGlobal flags: --config FILE, --env-file FILE (repeatable), --log-level, --log-format text|json")
	fmt.Fprintln(w, "Run `handset <command> --help` for a command's flags.")
}

// globals are the flags every command takes.
type globals struct {
	configFile string
	envFiles   stringList
	logLevel   string
	logFormat  string
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func newFlagSet(name string, env Env) (*flag.FlagSet, *globals) {
	fs := flag.NewFlagSet("handset "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	g := &globals{}
	fs.StringVar(&g.configFile, "config", "", "YAML settings `file` (default ./handset.yaml when present)")
	fs.Var(&g.envFiles, "env-file", "dotenv `file` to load (repeatable; never overrides the environment)")
	fs.StringVar(&g.logLevel, "log-level", "", "debug, info, warn or error")
	fs.StringVar(&g.logFormat, "log-format", "", "text or json")
	return fs, g
}

// parse parses args, turning flag errors into usage errors.
// parse reads flags wherever they are among the arguments ("call +1415… --wait" as well
// as "call --wait +1415…"); after "--" everything is an argument. fs.Args() then holds
// the arguments in order.
func parse(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return &usageError{msg: err.Error(), hint: "run `" + fs.Name() + " --help`"}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			positional = append(positional, rest...) // the caller ended the flags
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	return fs.Parse(append([]string{"--"}, positional...))
}

// loadConfig reads settings with the global flags and per-command overrides applied.
func loadConfig(env Env, g *globals, overrides map[string]string) (*config.Config, error) {
	if overrides == nil {
		overrides = map[string]string{}
	}
	if g.logLevel != "" {
		overrides["HANDSET_LOG_LEVEL"] = g.logLevel
	}
	if g.logFormat != "" {
		overrides["HANDSET_LOG_FORMAT"] = g.logFormat
	}
	return config.Load(config.LoadOptions{
		ConfigFile: g.configFile, EnvFiles: g.envFiles, WorkDir: env.WorkDir,
		Environ: env.Environ, Overrides: overrides,
	})
}

func newLogger(w io.Writer, cfg *config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
