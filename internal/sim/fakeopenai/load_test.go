package fakeopenai

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// within bounds a wait, so a broken fake fails the test instead of hanging it.
func within(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// nextData reads up to the next "data:" line and returns its payload.
func nextData(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			return strings.TrimPrefix(line, "data: ")
		}
	}
	t.Fatalf("stream ended: %v", sc.Err())
	return ""
}

// TestFirstTokenDelay: the role chunk comes first, the first content no sooner than
// FirstTokenDelay, and the reply is otherwise unchanged; a non-streamed reply does not wait.
func TestFirstTokenDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	_, srv := serve(t, Options{FirstTokenDelay: delay})
	sent := time.Now()
	resp := post(t, within(t), srv, "", chatBody(true, "hello there"))
	sc := bufio.NewScanner(resp.Body)
	role := nextData(t, sc)
	content := nextData(t, sc)
	// A lower bound only: the timer cannot fire early, however slow the machine.
	if waited := time.Since(sent); waited < delay {
		t.Errorf("first content %v after the request, want at least %v", waited, delay)
	}
	data := []string{role, content}
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	if text, _, done := decode(t, data); text != "I heard you say: hello there. What else can I do for you?" || !done {
		t.Errorf("text %q, done %t", text, done)
	}

	// The delay is an hour: a deadline of half a minute tells waiting from not, loaded or not.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, srv = serve(t, Options{FirstTokenDelay: time.Hour})
	if resp := post(t, ctx, srv, "", chatBody(false, "hi")); resp.StatusCode != http.StatusOK {
		t.Errorf("non-streamed reply: %d", resp.StatusCode)
	}
}

// TestFirstTokenDelayEndsWithTheRequest: a client that hangs up while waiting for the
// first token is recorded as an abort and the handler returns; Close ends the wait too,
// without an abort.
func TestFirstTokenDelayEndsWithTheRequest(t *testing.T) {
	t.Run("client goes away", func(t *testing.T) {
		fake, srv := serve(t, Options{FirstTokenDelay: time.Hour})
		ctx, cancel := context.WithCancel(within(t))
		resp := post(t, ctx, srv, "", chatBody(true, "hi"))
		nextData(t, bufio.NewScanner(resp.Body)) // the role chunk
		cancel()
		if err := fake.AwaitAborted(within(t), 1); err != nil {
			t.Fatal(err)
		}
		if err := fake.AwaitDone(within(t), 1); err != nil {
			t.Fatal(err)
		}
		if r := fake.Requests()[0]; r.Status != http.StatusOK || !r.Aborted {
			t.Errorf("record %+v", r)
		}
	})
	t.Run("Close", func(t *testing.T) {
		fake, srv := serve(t, Options{FirstTokenDelay: time.Hour})
		resp := post(t, within(t), srv, "", chatBody(true, "hi"))
		sc := bufio.NewScanner(resp.Body)
		nextData(t, sc)
		fake.Close()
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				t.Errorf("after Close the stream sent %s", sc.Text())
			}
		}
		if err := fake.AwaitDone(within(t), 1); err != nil {
			t.Fatal(err)
		}
		if fake.Aborted() != 0 {
			t.Error("Close was recorded as a client abort")
		}
	})
}

// TestLean: a lean server keeps no record, yet counts requests, completions and aborts,
// and answers as usual.
func TestLean(t *testing.T) {
	fake, srv := serve(t, Options{Lean: true})
	resp := post(t, within(t), srv, "", chatBody(true, "one"))
	data, _ := events(t, resp.Body)
	if text, _, done := decode(t, data); text != "I heard you say: one. What else can I do for you?" || !done {
		t.Errorf("text %q, done %t", text, done)
	}
	if resp := post(t, within(t), srv, "", chatBody(true, "FAIL500")); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("FAIL500 answered %d", resp.StatusCode)
	}
	ctx, cancel := context.WithCancel(within(t))
	held := make(chan struct{})
	go func() {
		defer close(held)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(chatBody(true, "HANG")))
		if resp, err := srv.Client().Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	if err := fake.AwaitRequests(within(t), 3); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-held
	if err := fake.AwaitAborted(within(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := fake.AwaitDone(within(t), 3); err != nil {
		t.Fatal(err)
	}
	if got := fake.Requests(); len(got) != 0 {
		t.Errorf("Requests() = %d records, want none", len(got))
	}
	fake.mu.Lock()
	kept := len(fake.reqs)
	fake.mu.Unlock()
	if kept != 0 || fake.RequestCount() != 3 || fake.Aborted() != 1 {
		t.Errorf("kept %d records, RequestCount %d, Aborted %d; want 0, 3, 1", kept, fake.RequestCount(), fake.Aborted())
	}
}

// TestRequestCountWithRecords: RequestCount matches the record when requests are kept.
func TestRequestCountWithRecords(t *testing.T) {
	fake, srv := serve(t, Options{})
	for range 2 {
		resp := post(t, within(t), srv, "", chatBody(false, "hi"))
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	if err := fake.AwaitDone(within(t), 2); err != nil {
		t.Fatal(err)
	}
	if n := fake.RequestCount(); n != 2 || len(fake.Requests()) != 2 {
		t.Errorf("RequestCount %d, %d records", n, len(fake.Requests()))
	}
}
