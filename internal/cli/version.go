package cli

import (
	"context"

	"fmt"
	"github.com/handset-voice/handset/internal/audio/vad/silero"
	"runtime"
	"strings"
)

// Set at build time: go build -ldflags "-X .../cli.version=v0.1.0 -X .../cli.commit=abc123".
var (
	version = "dev"
	commit  = "unknown"
)

// linkedEngines lists the embedded engines linked into this binary.
func linkedEngines() []string {
	out := []string{"webrtc VAD (wasm, needs fvad.wasm)"}
	if silero.Available() {
		out = append([]string{"silero VAD (ONNX Runtime, needs libonnxruntime.so and silero_vad_v5.onnx)"}, out...)
	}
	return out
}

func runVersion(_ context.Context, env Env, args []string) error {
	fs, _ := newFlagSet("version", env)
	if err := parse(fs, args); err != nil {
		return err
	}
	linked := strings.Join(linkedEngines(), "; ")
	if !silero.Available() {
		linked += " (build with -tags embedded for Silero)"
	}
	fmt.Fprintf(env.Stdout, "handset %s\ncommit: %s\ngo: %s %s/%s\nembedded engines: %s\n",
		version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, linked)
	return nil
}
