package httpagent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// A Close from another goroutine cuts off a read in progress, the runtime sees its
// request abandoned, and the failed read is classified as cancelled.
func TestReplyCloseAbortsTheRequest(t *testing.T) {
	abandoned := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first")
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
		close(abandoned)
	}))
	defer srv.Close()
	w := NewWatch(t.Context(), time.Hour)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := Send(testOrigin, srv.Client(), w, req, func(int, []byte) error { return errors.New("unused") })
	if err != nil {
		t.Fatal(err)
	}
	r := NewReply(w, resp.Body)
	buf := make([]byte, 5)
	if _, err := io.ReadFull(r.Body(), buf); err != nil || string(buf) != "first" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if r.Interrupted() || r.Closed() {
		t.Fatal("interrupted before anything cut it off")
	}
	read := make(chan error, 1)
	go func() {
		_, err := r.Body().Read(make([]byte, 1))
		read <- err
	}()
	for range 2 {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err = <-read:
	case <-time.After(30 * time.Second):
		t.Fatal("the read was not cut off by Close")
	}
	if err == nil || !r.Interrupted() || !r.Closed() {
		t.Fatalf("read err %v, interrupted %v, closed %v", err, r.Interrupted(), r.Closed())
	}
	perr := r.Aborted(testOrigin, err, "read")
	wantKind(t, perr, voice.KindCanceled)
	if !errors.Is(perr, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", perr)
	}
	select {
	case <-abandoned:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never saw the request abandoned")
	}
}

// A reply the runtime ended is released without counting as closed by the caller.
func TestReplyEndIsNotAClose(t *testing.T) {
	w := NewWatch(t.Context(), time.Hour)
	body := &countingBody{}
	r := NewReply(w, body)
	r.End()
	r.End()
	if r.Closed() {
		t.Error("an ended reply counts as closed by the caller")
	}
	_ = r.Close()
	if body.closes != 1 {
		t.Errorf("body closed %d times, want once", body.closes)
	}
	if r.Silent() {
		t.Error("an ended reply counts as silent")
	}
	if err := context.Cause(w.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("cause %v, want ErrClosed", err)
	}
}

type countingBody struct{ closes int }

func (b *countingBody) Read([]byte) (int, error) { return 0, io.EOF }
func (b *countingBody) Close() error             { b.closes++; return nil }
