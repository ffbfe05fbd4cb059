package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/handset-voice/handset/internal/engines"
)

// Set at build time to override what the build's VCS stamp says:
// go build -ldflags "-X .../cli.version=v0.1.0 -X .../cli.commit=abc123".
var (
	version = "dev"
	commit  = "unknown"
)

// describeBuild is the version and commit to show: the -ldflags -X values when set, else
// what go build stamped from git (bi may be nil: no build information).
func describeBuild(ldVersion, ldCommit string, bi *debug.BuildInfo) (ver, rev string) {
	vcs := map[string]string{}
	if bi != nil {
		for _, s := range bi.Settings {
			vcs[s.Key] = s.Value
		}
	}
	short := vcs["vcs.revision"]
	if len(short) > 8 {
		short = short[:8]
	}

	ver = ldVersion
	switch {
	case ver != "dev":
	case bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)":
		ver = bi.Main.Version // go build's pseudo-version, +dirty when modified
	case short != "":
		ver = "dev-" + short
	}

	rev = ldCommit
	if rev == "unknown" && short != "" {
		var notes []string
		if t := vcs["vcs.time"]; t != "" {
			notes = append(notes, t)
		}
		if vcs["vcs.modified"] == "true" {
			notes = append(notes, "modified")
		}
		rev = short
		if len(notes) > 0 {
			rev += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	return ver, rev
}

// buildVersion is this binary's version, as `handset version` says it.
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	ver, _ := describeBuild(version, commit, bi)
	return ver
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
	warnSettings(newLogger(env.Stderr, cfg), cfg)
	tags := engines.BuildTags()
	if tags == "" {
		tags = "none"
	}
	bi, _ := debug.ReadBuildInfo()
	ver, rev := describeBuild(version, commit, bi)
	fmt.Fprintf(env.Stdout, "handset %s\ncommit: %s\ngo: %s %s/%s\nbuild tags: %s\nengines:\n",
		ver, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH, tags)
	for _, e := range engines.List(cfg) {
		fmt.Fprintf(env.Stdout, "  %s\n", e.Brief())
	}
	fmt.Fprint(env.Stdout, engines.FilesReport(engines.SystemLookup(cfg)))
	if !strings.Contains(tags, "embedded") {
		fmt.Fprintf(env.Stdout, "the offline engines need a build with -tags embedded: %s\n", engines.SetupHint)
	}
	return nil
}
