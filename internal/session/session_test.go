package session

import (
	"strings"
	"testing"
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

func TestLoadOrCreateSecretIsStable(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadOrCreateSecret("", dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreateSecret("", dir)
	if err != nil || string(a) != string(b) || len(a) < 32 {
		t.Fatalf("secret not stable: %q %q %v", a, b, err)
	}
	if c, _ := LoadOrCreateSecret("configured", dir); string(c) != "configured" {
		t.Errorf("configured secret ignored: %q", c)
	}
}
