package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/gateway"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// The words `handset test` speaks with the TTS and expects the STT to hear back.
const probePhrase = "testing one two three"

// minWordOverlap is the share of the probe's words the STT must hear back, in order, for
// the round trip to pass: 3 of the 4 (one word misheard is tolerated, two are not).
const minWordOverlap = 0.75

// probeResult is one stage of `handset test`.
type probeResult struct {
	Stage    string  `json:"stage"` // "agent", "tts", "stt"
	Provider string  `json:"provider"`
	OK       bool    `json:"ok"`
	FirstMS  float64 `json:"first_ms,omitempty"` // to first token / first audio / final transcript
	TotalMS  float64 `json:"total_ms,omitempty"`
	Result   string  `json:"result,omitempty"` // reply snippet, audio length, transcript
	Error    string  `json:"error,omitempty"`
	Fix      string  `json:"fix,omitempty"`
	// stt: the transcript, and how many of the probe phrase's words it holds, in order.
	Heard         *string `json:"heard,omitempty"`
	WordsHeard    int     `json:"words_heard,omitempty"`
	WordsExpected int     `json:"words_expected,omitempty"`
}

// runTest is acceptance, not preflight: one real turn through the configured runtime, with
// the session a call would carry, then the TTS speaking a phrase and the STT hearing it.
func runTest(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("test", env)
	prompt := fs.String("prompt", "This is a test from Handset, the phone gateway. Reply with one short sentence.", "what the test caller says to the agent")
	caller := fs.String("caller", "+15550100000", "the caller `number` whose session the turn uses (hashed, never sent)")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	timeout := fs.Duration("timeout", 60*time.Second, "limit for the agent's turn")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(env, g, nil)
	if err != nil {
		return err
	}
	warnSettings(newLogger(env.Stderr, cfg), cfg)
	if err := cfg.Validate(config.ValidateOptions{RequireAgent: true, RequireKeys: true}); err != nil {
		return err
	}
	log := newLogger(io.Discard, cfg)
	st, err := gateway.OpenStore(ctx, cfg)
	if err != nil {
		return err
	}
	secret, err := gateway.CallerHashSecret(ctx, st, cfg)
	st.Close()
	if err != nil {
		return err
	}
	info := voice.LegInfo{CallID: voice.NewCallID(), Carrier: "test", Direction: voice.Inbound, From: *caller, To: cfg.PhoneNumber, Format: audio.Telephone}
	sc := session.NewContext(info, secret)

	results := []probeResult{probeAgent(ctx, cfg, log, sc, *prompt, *timeout)}
	tts, audioOut := probeTTS(ctx, cfg, log)
	results = append(results, tts, probeSTT(ctx, cfg, log, audioOut))

	failed := false
	for _, r := range results {
		failed = failed || !r.OK
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			printProbe(env.Stdout, r)
		}
	}
	if failed {
		return errReported
	}
	return nil
}

func printProbe(w io.Writer, r probeResult) {
	mark := "ok  "
	if !r.OK {
		mark = "FAIL"
	}
	fmt.Fprintf(w, "%s %-5s %-10s", mark, r.Stage, r.Provider)
	if r.OK {
		fmt.Fprintf(w, " first %.0f ms, total %.0f ms: %s\n", r.FirstMS, r.TotalMS, r.Result)
		return
	}
	fmt.Fprintf(w, " %s\n", r.Error)
	if r.Fix != "" {
		fmt.Fprintf(w, "     fix: %s\n", r.Fix)
	}
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// probeAgent runs one turn, with the call's session context, to the end of the reply.
func probeAgent(ctx context.Context, cfg *config.Config, log *slog.Logger, sc session.Context, prompt string, limit time.Duration) probeResult {
	r := probeResult{Stage: "agent", Provider: cfg.Agent.Runtime}
	agent, err := gateway.BuildAgent(cfg, log)
	if err != nil {
		return failed(r, err, agentFix(cfg, err))
	}
	if c, ok := agent.(interface{ Close() error }); ok {
		defer c.Close()
	}
	ctx, cancel := context.WithTimeout(session.With(ctx, sc), limit)
	defer cancel()
	start := time.Now()
	stream, err := agent.Reply(ctx, voice.TurnRequest{
		CallID: sc.CallID, Turn: 1, CallerHash: sc.CallerHash,
		History: []voice.Message{{Role: voice.RoleUser, Content: prompt}},
	})
	if err != nil {
		return failed(r, err, agentFix(cfg, err))
	}
	defer stream.Close()
	var reply strings.Builder
	for {
		chunk, err := stream.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return failed(r, err, agentFix(cfg, err))
		}
		if chunk.Text != "" && r.FirstMS == 0 {
			r.FirstMS = msSince(start)
		}
		reply.WriteString(chunk.Text)
	}
	r.TotalMS = msSince(start)
	text := strings.TrimSpace(reply.String())
	if text == "" {
		err := errors.New("the runtime answered with no text")
		return failed(r, err, agentFix(cfg, err))
	}
	r.OK, r.Result = true, fmt.Sprintf("%q", snippet(text, 100))
	return r
}

// probeTTS speaks the probe phrase in the phone format and returns the audio.
func probeTTS(ctx context.Context, cfg *config.Config, log *slog.Logger) (probeResult, []byte) {
	r := probeResult{Stage: "tts", Provider: cfg.TTS.Provider}
	tts, err := gateway.BuildTTS(cfg, log)
	if err != nil {
		return failed(r, err, speechFix(cfg, "tts")), nil
	}
	defer release(tts)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	rd, err := tts.Synthesize(ctx, probePhrase, audio.Telephone)
	if err != nil {
		return failed(r, err, speechFix(cfg, "tts")), nil
	}
	defer rd.Close()
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := rd.Read(buf)
		if n > 0 && r.FirstMS == 0 {
			r.FirstMS = msSince(start)
		}
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return failed(r, err, speechFix(cfg, "tts")), nil
		}
	}
	r.TotalMS = msSince(start)
	if len(out) == 0 {
		return failed(r, errors.New("no audio came back"), speechFix(cfg, "tts")), nil
	}
	r.OK, r.Result = true, fmt.Sprintf("%.1f s of audio for %q", audio.Telephone.Duration(len(out)).Seconds(), probePhrase)
	return r, out
}

// probeSTT streams the TTS's audio (or, without it, a second of silence) to the
// recognizer in real time and waits for its final transcript.
func probeSTT(ctx context.Context, cfg *config.Config, log *slog.Logger, speech []byte) probeResult {
	r := probeResult{Stage: "stt", Provider: cfg.STT.Provider}
	stt, err := gateway.BuildSTT(cfg, log)
	if err != nil {
		return failed(r, err, speechFix(cfg, "stt"))
	}
	defer release(stt)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	stream, err := stt.Stream(ctx, audio.Telephone, voice.StreamOptions{CallID: "test"})
	if err != nil {
		return failed(r, err, speechFix(cfg, "stt"))
	}
	defer stream.Close()
	// Trailing quiet, as a caller pauses (mu-law silence is 0xFF).
	quiet := make([]byte, audio.Telephone.Bytes(600*time.Millisecond))
	for i := range quiet {
		quiet[i] = 0xFF
	}
	frame := audio.Telephone.FrameBytes()
	tick := time.NewTicker(audio.FrameDuration)
	defer tick.Stop()
	for all, i := append(speech, quiet...), 0; i < len(all); i += frame {
		_ = stream.Write(all[i:min(i+frame, len(all))])
		<-tick.C
	}
	start := time.Now()
	_ = stream.Finalize()
	for {
		select {
		case tr, ok := <-stream.Results():
			if !ok {
				return failed(r, fmt.Errorf("the stream ended: %v", stream.Close()), speechFix(cfg, "stt"))
			}
			if !tr.Final {
				continue
			}
			r.FirstMS, r.TotalMS = msSince(start), msSince(start)
			if len(speech) == 0 {
				// The TTS failed (and says so): only the stream itself was tested.
				r.OK, r.Result = true, fmt.Sprintf("heard %q in a second of silence (no TTS audio to hear)", tr.Text)
				return r
			}
			return judgeHeard(r, cfg, tr.Text)
		case <-ctx.Done():
			return failed(r, errors.New("no final transcript within 20 s"), speechFix(cfg, "stt"))
		}
	}
}

// judgeHeard passes the STT when the transcript holds enough of the probe phrase's words.
func judgeHeard(r probeResult, cfg *config.Config, text string) probeResult {
	heard, want := wordOverlap(probePhrase, text)
	r.Heard, r.WordsHeard, r.WordsExpected = &text, heard, want
	share := float64(heard) / float64(want)
	if share >= minWordOverlap {
		r.OK, r.Result = true, fmt.Sprintf("heard %q (%d of %d words)", text, heard, want)
		return r
	}
	r.OK = false
	r.Error = fmt.Sprintf("heard %q for %q: %d of %d words (%.0f%%), the round trip needs %.0f%%",
		text, probePhrase, heard, want, 100*share, 100*minWordOverlap)
	r.Fix = mishearFix(cfg)
	return r
}

// mishearFix is what to check when the STT answers but mishears the TTS: the provider's
// own advice, or the general one.
func mishearFix(cfg *config.Config) string {
	if p, ok := registry.Find[registry.STT](cfg.STT.Provider); ok && p.Hints.MishearFix != nil {
		return p.Hints.MishearFix(cfg)
	}
	return "check the STT's language and model, and that the TTS voice speaks that language"
}

// wordOverlap counts the words of want that got holds in the same order (their longest
// common subsequence), after normalising both; and how many words want has.
func wordOverlap(want, got string) (heard, total int) {
	w, g := normWords(want), normWords(got)
	// prev[j], cur[j]: the longest common subsequence of w[:i] and g[:j].
	prev, cur := make([]int, len(g)+1), make([]int, len(g)+1)
	for i := range w {
		for j := range g {
			switch {
			case w[i] == g[j]:
				cur[j+1] = prev[j] + 1
			default:
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(g)], len(w)
}

// digitWords spell digits, so "1 2 3" and "123" count as "one two three".
var digitWords = [...]string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

// normWords lower-cases s, drops apostrophes, splits on everything that is not a letter
// or a digit, and spells each digit as its own word.
func normWords(s string) []string {
	s = strings.ToLower(strings.NewReplacer("'", "", "’", "").Replace(s))
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		var word strings.Builder
		for _, r := range f {
			if r >= '0' && r <= '9' {
				if word.Len() > 0 {
					out = append(out, word.String())
					word.Reset()
				}
				out = append(out, digitWords[r-'0'])
				continue
			}
			word.WriteRune(r)
		}
		if word.Len() > 0 {
			out = append(out, word.String())
		}
	}
	return out
}

func release(x any) {
	if c, ok := x.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

func failed(r probeResult, err error, fix string) probeResult {
	r.OK, r.Error, r.Fix = false, err.Error(), fix
	return r
}

func snippet(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// agentFix is the first thing to check when the runtime fails with err: the runtime's own
// advice (for OpenClaw, the fix doctor gives for the same failure), or the general one.
func agentFix(cfg *config.Config, err error) string {
	if p, ok := registry.Find[registry.Agent](cfg.Agent.Runtime); ok && p.Hints.TestFix != nil {
		return p.Hints.TestFix(cfg, err)
	}
	return "run `handset doctor`; check HANDSET_AGENT_URL, HANDSET_AGENT_KEY and HANDSET_AGENT_MODEL"
}

// speechFix names the settings of the configured STT or TTS provider.
func speechFix(cfg *config.Config, stage string) string {
	var about registry.About
	var ok bool
	if stage == "tts" {
		var p registry.TTS
		p, ok = registry.Find[registry.TTS](cfg.TTS.Provider)
		about = p.Info()
	} else {
		var p registry.STT
		p, ok = registry.Find[registry.STT](cfg.STT.Provider)
		about = p.Info()
	}
	if ok && about.Hints.TestFix != nil {
		return about.Hints.TestFix(cfg, nil)
	}
	return "run `handset doctor`"
}
