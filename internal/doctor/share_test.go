package doctor

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestOnceComputesOnceForEveryCheck(t *testing.T) {
	var o Once[int]
	var runs atomic.Int32
	f := func(context.Context) (int, error) { return int(runs.Add(1)) * 7, nil }
	done := make(chan int)
	for range 4 {
		go func() {
			v, _ := o.Get(context.Background(), f)
			done <- v
		}()
	}
	for range 4 {
		if v := <-done; v != 7 {
			t.Errorf("got %d, want the first computation's 7", v)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("computed %d times, want once", n)
	}
}

func TestOnceWaiterGivesUpWithItsContext(t *testing.T) {
	var o Once[int]
	started, release := make(chan struct{}), make(chan struct{})
	go o.Get(context.Background(), func(context.Context) (int, error) {
		close(started)
		<-release
		return 1, nil
	})
	<-started
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := o.Get(ctx, func(context.Context) (int, error) { return 2, nil }); err != context.DeadlineExceeded {
		t.Fatalf("err = %v, want the waiter's own deadline", err)
	}
}

func TestModelListAndFirstFew(t *testing.T) {
	ids, ok := ModelList([]byte(`{"data":[{"id":"a"},{"id":"b"},{"id":"c"}]}`))
	if !ok || len(ids) != 3 {
		t.Fatalf("ModelList = %v, %v", ids, ok)
	}
	if _, ok := ModelList([]byte(`{"models":["a"]}`)); ok {
		t.Error("a list in another shape read as OpenAI's")
	}
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
