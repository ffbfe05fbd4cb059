package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/fakehermes"
)

const bridgeToken = "bridge-token-abcdefabcdefabcdefabcdefabcdef12"

// startBridgeCommand runs `handset bridge` in front of a fake Hermes until the test ends,
// and returns its address and the fake.
func startBridgeCommand(t *testing.T, extra ...string) (string, *fakehermes.Server, *syncBuffer) {
	t.Helper()
	fake := fakehermes.New(fakehermes.Options{Key: "hermes-key"})
	hs := httptest.NewServer(fake)
	t.Cleanup(func() { fake.Close(); hs.Close() })
	env := append([]string{"HANDSET_AGENT=hermes", "HANDSET_AGENT_URL=" + hs.URL + "/v1", "HANDSET_AGENT_KEY=hermes-key",
		"HANDSET_LISTEN=127.0.0.1:0", "HANDSET_DATA_DIR=" + t.TempDir(), "HANDSET_BRIDGE_TOKEN=" + bridgeToken}, extra...)
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	ready, exited := make(chan string, 1), make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"bridge"}, Env{Stdout: logs, Stderr: logs, Environ: env, WorkDir: t.TempDir(),
			Ready: func(addr string) { ready <- addr }})
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-exited; code != 0 {
			t.Errorf("bridge exited with %d:\n%s", code, logs)
		}
	})
	select {
	case addr := <-ready:
		return addr, fake, logs
	case code := <-exited:
		exited <- code
		t.Fatalf("bridge exited with %d before listening:\n%s", code, logs)
	case <-time.After(10 * time.Second):
		t.Fatalf("bridge did not start:\n%s", logs)
	}
	return "", nil, nil
}

func bridgeTurn(t *testing.T, addr, said string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": said}}})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bridgeToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&c)
	if len(c.Choices) == 0 {
		return resp.StatusCode, ""
	}
	return resp.StatusCode, c.Choices[0].Message.Content
}

// A voice platform streams many turns at once from one address, a connection each: once
// it has shown its token, the bridge holds them all (up to its token's
// HANDSET_BRIDGE_MAX_TURNS), not only the 64 connections the server allows an address it
// knows nothing about.
func TestBridgeHoldsAPlatformsStreamsFromOneAddress(t *testing.T) {
	const streams = 200 // HANDSET_BRIDGE_MAX_TURNS's default
	// 2,400 turns a minute lets 600 come at once
	addr, _, _ := startBridgeCommand(t, "HANDSET_BRIDGE_RATE=2400")
	if status, _ := bridgeTurn(t, addr, "Are you open?"); status != http.StatusOK {
		t.Fatalf("first turn: HTTP %d", status)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	var (
		wg     sync.WaitGroup
		failed atomic.Int32
		heard  = make(chan struct{}, streams)
		all    = make(chan struct{})
	)
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"stream": true, "user": fmt.Sprintf("room-%d", i),
				"messages": []map[string]string{{"role": "user", "content": "Read me the menu SLOW"}}})
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+bridgeToken)
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("stream %d: %v", i, err)
				failed.Add(1)
				heard <- struct{}{}
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.Contains(sc.Text(), `"content":"`) {
					break
				}
			}
			heard <- struct{}{}
			<-all // every stream stays open until all have their first text
			rest, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(rest), "[DONE]") {
				t.Errorf("stream %d: HTTP %d, ended %q", i, resp.StatusCode, rest[max(0, len(rest)-80):])
				failed.Add(1)
			}
		}()
	}
	for range streams {
		select {
		case <-heard:
		case <-time.After(30 * time.Second):
			t.Fatal("not every stream had its first text within 30 s")
		}
	}
	close(all)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d streams from one address failed", n, streams)
	}
}

// `handset bridge` serves the bridge alone: a turn through the runtime, and nothing of
// serve's (no API, no carrier webhooks, no call page). It needs no speech settings.
func TestBridgeCommand(t *testing.T) {
	addr, _, _ := startBridgeCommand(t)
	status, text := bridgeTurn(t, addr, "Do you deliver?")
	if want := fakehermes.ReplyText([]fakehermes.Message{{Role: "user", Content: "Do you deliver?"}}); status != http.StatusOK || text != want {
		t.Errorf("HTTP %d %q, want %q", status, text, want)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`handset_bridge_turns_total{outcome="ok"} 1`, "handset_bridge_first_text_seconds_count 1"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, path := range []string{"/api/calls", "/twilio/voice", "/dashboard"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: HTTP %d, want 404 (the bridge serves nothing else)", path, resp.StatusCode)
		}
	}
}

// Without its token the bridge does not start, and says which setting to set.
func TestBridgeCommandWantsItsToken(t *testing.T) {
	code, out := runCmd(t, []string{"HANDSET_AGENT=hermes", "HANDSET_AGENT_KEY=k", "HANDSET_DATA_DIR=" + t.TempDir()}, "bridge")
	if code != 1 || !strings.Contains(out, "HANDSET_BRIDGE_TOKEN") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, out = runCmd(t, []string{"HANDSET_BRIDGE_TOKEN=" + bridgeToken, "HANDSET_DATA_DIR=" + t.TempDir()}, "bridge")
	if code != 1 || !strings.Contains(out, "HANDSET_AGENT (") {
		t.Errorf("no runtime: exit %d:\n%s", code, out)
	}
}

// serve with HANDSET_BRIDGE=true answers the bridge beside everything else, with the calls'
// runtime; without it the route is not there.
func TestServeMountsTheBridge(t *testing.T) {
	r := startServe(t, nil, "HANDSET_BRIDGE=true", "HANDSET_BRIDGE_TOKEN="+bridgeToken)
	if status, text := bridgeTurn(t, r.addr, "Do you deliver?"); status != http.StatusOK || text == "" {
		t.Errorf("HTTP %d %q", status, text)
	}
	if !strings.Contains(r.logs.String(), "agent bridge on") {
		t.Errorf("serve did not say the bridge is on:\n%s", r.logs)
	}
	off := startServe(t, nil)
	if status, _ := bridgeTurn(t, off.addr, "Do you deliver?"); status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		t.Errorf("bridge off: HTTP %d, want no route", status)
	}
}
