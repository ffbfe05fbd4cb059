package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set at build time: go build -ldflags "-X .../cli.version=v0.1.0 -X .../cli.commit=abc123".
var (
	version = "dev"
	commit  = "unknown"
)

// buildTags are the tags this binary was built with ("embedded" links the offline engines).
func buildTags() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-tags" {
				return s.Value
			}
		}
	}
	return ""
}

func runVersion(_ context.Context, env Env, args []string) error {
	fs, g := newFlagSet("version", env)
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(env, g, nil)
	if err != nil {
		return err
	}
	tags := buildTags()
	if tags == "" {
		tags = "none"
	}
	fmt.Fprintf(env.Stdout, "handset %s\ncommit: %s\ngo: %s %s/%s\nbuild tags: %s\nengines:\n",
		version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, tags)
	for _, e := range engines(cfg) {
		fmt.Fprintf(env.Stdout, "  %s\n", e)
	}
	if !strings.Contains(tags, "embedded") {
		fmt.Fprintf(env.Stdout, "the offline engines need a build with -tags embedded: %s\n", setupHint)
	}
	return nil
}
