package doctor

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFirstFew(t *testing.T) {
	ids := []string{"a", "b", "c"}
	if got := FirstFew(ids, 2); got != "a, b and 1 more" {
		t.Errorf("FirstFew = %q", got)
	}
	if got := FirstFew(ids, 3); got != "a, b, c" {
		t.Errorf("FirstFew = %q", got)
	}
}

func TestIsLoopback(t *testing.T) {
	for u, want := range map[string]bool{
		"http://127.0.0.1:8642/v1": true, "http://localhost:1": true, "ws://[::1]:18789": true,
		"http://0.0.0.0:80": true, "https://api.example.com/v1": false, "http://10.0.0.5": false,
	} {
		if got := IsLoopback(u); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", u, got, want)
		}
	}
}

func TestLookPathReadsTheGivenPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "hermes")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := LookPath([]string{"PATH=/nowhere:" + dir}, "hermes"); got != bin {
		t.Errorf("LookPath = %q, want %q", got, bin)
	}
	if got := LookPath([]string{"PATH=/nowhere"}, "hermes"); got != "" {
		t.Errorf("LookPath = %q on a PATH without it", got)
	}
}

func TestFirstLine(t *testing.T) {
	if got := FirstLine([]byte("\n  \n  gateway running (pid 12)\nmore\n")); got != "gateway running (pid 12)" {
		t.Errorf("FirstLine = %q", got)
	}
}
