package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDoctorSecretsNeverTickAMissingOne: the secrets line is a warning naming the missing
// key when one is missing, and a check mark only when every key the set-up uses is set.
func TestDoctorSecretsNeverTickAMissingOne(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"HANDSET_AGENT=echo", "HANDSET_STT=deepgram", "HANDSET_TTS=elevenlabs", "ELEVENLABS_API_KEY=el-test"},
			"  ! secrets: DEEPGRAM_API_KEY missing, ELEVENLABS_API_KEY set (environment)\n"},
		{[]string{"HANDSET_AGENT=echo", "HANDSET_STT=deepgram", "DEEPGRAM_API_KEY=dg-test", "HANDSET_TTS=elevenlabs", "ELEVENLABS_API_KEY=el-test"},
			"  ✓ secrets: DEEPGRAM_API_KEY set (environment), ELEVENLABS_API_KEY set (environment)\n"},
	} {
		var out, errOut bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errOut, WorkDir: t.TempDir(),
			Environ: append([]string{"HOME=" + t.TempDir(), "PATH=" + t.TempDir()}, tc.env...)}
		_ = runDoctor(context.Background(), env, []string{"--no-network"})
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("doctor with %v does not say %q:\n%s", tc.env, tc.want, out.String())
		}
	}
}
