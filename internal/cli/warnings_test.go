package cli

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestEveryCommandWarnsOfUnknownNames: each command that reads the settings tells, once, of
// a HANDSET_ name that is not a setting, with the closest one, whether it then succeeds or
// fails for other reasons (nothing configured, no calls yet).
func TestEveryCommandWarnsOfUnknownNames(t *testing.T) {
	for _, args := range [][]string{
		{"version"}, {"trace"}, {"diagnose"}, {"numbers"}, {"call", "+15551234567"},
		{"test"}, {"simulate", "--say", "hi"}, {"agents"}, {"install", "--dry-run", "--prefix", t.TempDir()},
		{"bench", "--calls", "1", "--duration", "1s"}, {"attach-number", "+14155550100"}, {"demo", "--listen", "127.0.0.1:1"},
	} {
		t.Run(args[0], func(t *testing.T) {
			var out, errOut syncBuffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if args[0] == "bench" {
				cancel() // it reads the settings before it starts; it need not run
			}
			env := Env{Stdout: &out, Stderr: &errOut, WorkDir: t.TempDir(),
				Environ: []string{"HOME=" + t.TempDir(), "HANDSET_DATA_DIR=" + t.TempDir(), "HANDSET_SST=deepgram",
					"HANDSET_AGENT=nosuch"}, // demo and bench stop at once on it, after the warning
				Ready: func(string) { cancel() }}
			Main(ctx, args, env)
			if n := strings.Count(errOut.String(), "did you mean HANDSET_STT?"); n != 1 {
				t.Errorf("handset %s: the warning about HANDSET_SST appears %d times, want once; stderr:\n%s", strings.Join(args, " "), n, errOut.String())
			}
		})
	}
}
