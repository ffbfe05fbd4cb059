//go:build embedded

package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/pagetest"
)

// pageView is what the test reads off the call page.
type pageView struct {
	State  string   `json:"state"`
	Caller []string `json:"caller"`
	Agent  []string `json:"agent"`
	Played float64  `json:"played"`
	Sent   float64  `json:"sent"`
	Notice string   `json:"notice"`
}

const readPage = `JSON.stringify({
  state: document.body.dataset.state,
  caller: [...document.querySelectorAll("#transcript li.caller")].map(li => li.textContent),
  agent: [...document.querySelectorAll("#transcript li.agent")].map(li => li.textContent),
  played: parseFloat(document.getElementById("played").textContent),
  sent: parseFloat(document.getElementById("sent").textContent),
  notice: document.getElementById("notice").textContent,
})`

// TestDemoInChromium: `handset demo` with nothing but the offline engines, called from a
// real headless Chromium whose microphone is a flite-spoken WAV. The page shows the
// caller's words transcribed, the agent's reply, and that the reply's audio played.
func TestDemoInChromium(t *testing.T) {
	// The fake microphone loops the file: speech, then a long pause.
	speech := fliteSpeech(t, "slt", "please book a table for two at seven", 16000)
	mic := audiotest.Concat(audiotest.Silence(16000, 2500*time.Millisecond), speech, audiotest.Silence(16000, 6*time.Second))
	micPath := filepath.Join(t.TempDir(), "caller.wav")
	if err := wav.WriteFile(micPath, audio.Format{Encoding: audio.PCM16, Rate: 16000}, pcmBytes(mic)); err != nil {
		t.Fatal(err)
	}

	// No runtime answers on these ports, so the demo picks the echo agent.
	saved := demoProbes
	demoProbes = []runtimeProbe{{runtime: "hermes", label: "Hermes Agent", url: "http://127.0.0.1:9"}}
	defer func() { demoProbes = saved }()
	dataDir := t.TempDir()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	ready, exited := make(chan string, 1), make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"demo", "--listen", "127.0.0.1:0"}, Env{
			Stdout: logs, Stderr: logs, WorkDir: t.TempDir(),
			Environ: []string{"HANDSET_DATA_DIR=" + dataDir, "HANDSET_ENGINES_DIR=" + repoEngines(t), "HANDSET_SPHINX_DECODERS=1"},
			Ready:   func(addr string) { ready <- addr },
		})
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-exited:
		cancel()
		t.Fatalf("demo exited with %d:\n%s", code, logs.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("demo did not start")
	}
	defer func() {
		cancel()
		if code := <-exited; code != 0 {
			t.Errorf("demo exited with %d:\n%s", code, logs.String())
		}
	}()
	if out := logs.String(); !strings.Contains(out, "agent:          echo") || !strings.Contains(out, "Open http://") {
		t.Errorf("demo did not say what it chose and where to go:\n%s", out)
	}

	bctx, stopBrowser := pagetest.Start(t, pagetest.Options{Microphone: micPath})
	defer stopBrowser() // before the demo stops

	// The page is checked as a person meets it: before the call, and in it.
	url := "http://" + addr + "/"
	if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible("#call")); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	pagetest.CheckAccessibility(t, bctx, "demo-chromium-idle")
	if err := chromedp.Do(bctx, chromedp.Click("#call")); err != nil {
		t.Fatalf("click Call: %v", err)
	}
	var view pageView
	read := func() {
		raw, err := chromedp.Run(bctx, chromedp.Evaluate[string](readPage))
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		if err := json.Unmarshal([]byte(raw), &view); err != nil {
			t.Fatal(err)
		}
	}
	wants := []string{"book", "table", "two", "seven"}
	done := func() bool {
		for i, heard := range view.Caller {
			if keywordsIn(heard, wants...) >= 2 && i < len(view.Agent) && view.Agent[len(view.Agent)-1] != "" && view.Played > 2 {
				return true
			}
		}
		return false
	}
	for read(); !done(); read() {
		select {
		case <-bctx.Done():
			pagetest.Screenshot(t, bctx, "demo-chromium-failed.png")
			t.Fatalf("the page never showed a transcribed turn and its played reply: %+v\n%s", view, logs.String())
		case <-time.After(250 * time.Millisecond):
		}
	}
	pagetest.CheckAccessibility(t, bctx, "demo-chromium")
	t.Logf("page: %+v", view)
	if err := chromedp.Do(bctx, chromedp.Click("#hangup")); err != nil {
		t.Fatal(err)
	}

	// The journal agrees with the page: a browser call, the words reached the agent.
	paths, _ := filepath.Glob(filepath.Join(dataDir, "calls", "*", "events.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("journals: %v", paths)
	}
	var events []obs.Event
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		events, _ = obs.ReadFile(paths[0])
		if n := len(events); (n > 0 && events[n-1].Type == obs.CallEnd) || time.Now().After(deadline) {
			break
		}
	}
	if start := events[0]; start.Carrier != "browser" || start.STT != "sphinx" || start.TTS != "flite" || start.Agent != "echo" {
		t.Errorf("call.start %+v", start)
	}
	for _, turn := range obs.Turns(events) {
		t.Logf("turn %d %q -> %q: speech end to first reply audio %.0f ms (endpoint %.0f + response %.0f)",
			turn.Turn, turn.Caller, turn.Reply, turn.EndpointMS+turn.ResponseMS, turn.EndpointMS, turn.ResponseMS)
	}
}

func pcmBytes(pcm []int16) []byte {
	out := make([]byte, 2*len(pcm))
	for i, s := range pcm {
		out[2*i], out[2*i+1] = byte(s), byte(uint16(s)>>8)
	}
	return out
}
