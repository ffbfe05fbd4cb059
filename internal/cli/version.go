package cli

import (
	"context"
	"fmt"
	"runtime"
	"strings"
)

// Set at build time: go build -ldflags "-X .../cli.version=v0.1.0 -X .../cli.commit=abc123".
var (
	version = "dev"
	commit  = "unknown"
)

// engines lists the embedded engines linked into this binary; files behind build tags
// add themselves.
var engines []string

func runVersion(_ context.Context, env Env, args []string) error {
	fs, _ := newFlagSet("version", env)
	if err := parse(fs, args); err != nil {
		return err
	}
	linked := "none (build with -tags embedded for offline speech)"
	if len(engines) > 0 {
		linked = strings.Join(engines, ", ")
	}
	fmt.Fprintf(env.Stdout, "handset %s\ncommit: %s\ngo: %s %s/%s\nembedded engines: %s\n",
		version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, linked)
	return nil
}
