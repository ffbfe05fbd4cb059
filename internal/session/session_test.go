package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/voice"
)

func TestCallerHash(t *testing.T) {
	secret := []byte("s3cret")
	a := CallerHash(secret, "+1 (555) 010-2000")
	if a != CallerHash(secret, "+15550102000") || a != CallerHash(secret, "0015550102000") {
		t.Error("the same number written differently hashes differently")
	}
	if a == CallerHash(secret, "+15550102001") || a == CallerHash([]byte("other"), "+15550102000") {
		t.Error("different number or secret gives the same hash")
	}
	if strings.Contains(a, "5550102000") || !strings.HasPrefix(a, "ch_") || len(a) != 27 {
		t.Errorf("hash %q leaks the number or has the wrong shape", a)
	}
	if CallerHash(secret, "") != "" {
		t.Error("empty number must give an empty hash")
	}
}

func TestSecretCandidate(t *testing.T) {
	dir := t.TempDir()
	a, err := SecretCandidate(dir)
	b, _ := SecretCandidate(dir)
	if err != nil || len(a) != 64 || a == b {
		t.Fatalf("fresh candidates %q %q %v: want two different 64-hex secrets", a, b, err)
	}
	legacy := strings.Repeat("ab", 32)
	if err := os.WriteFile(filepath.Join(dir, "caller-hash-secret"), []byte(legacy+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, _ := SecretCandidate(dir); c != legacy {
		t.Errorf("the secret an older Handset generated was not proposed: %q", c)
	}
}

// An outbound call to someone who called in before reaches their memory: the person on
// the line is the number called, not Handset's own number.
func TestOutboundCallerIsThePersonCalled(t *testing.T) {
	secret := []byte("secret")
	in := NewContext(voice.LegInfo{CallID: "c_in", Direction: voice.Inbound, From: "+15550102000", To: "+15550009999"}, secret)
	out := NewContext(voice.LegInfo{CallID: "c_out", Direction: voice.Outbound, From: "+15550009999", To: "+1 555 010 2000"}, secret)
	if in.CallerHash != out.CallerHash || in.CalleeHash != out.CalleeHash {
		t.Errorf("inbound %s/%s, outbound %s/%s: the same person and line must hash the same",
			in.CallerHash, in.CalleeHash, out.CallerHash, out.CalleeHash)
	}
	if person, _ := out.RawNumbers(); person != "+1 555 010 2000" {
		t.Errorf("outbound person = %q", person)
	}
}
