package mediastream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
)

// oneCallMemory keeps the answer of one call, or fails every request when fail is set.
// (The embedded interface stands for the methods these rules do not use.)
type oneCallMemory struct {
	carrier.Memory
	kept *carrier.Answer
	fail error
}

func (m *oneCallMemory) Remember(ctx context.Context, a carrier.Answer) (carrier.Answer, bool, error) {
	if _, ok := ctx.Deadline(); !ok {
		return a, false, errors.New("a memory call without a deadline")
	}
	if m.fail != nil {
		return carrier.Answer{}, false, m.fail
	}
	if m.kept != nil {
		return *m.kept, false, nil
	}
	m.kept = &a
	return a, true, nil
}

func (m *oneCallMemory) Streamed(ctx context.Context, ref string, _ time.Time) error {
	switch _, ok := ctx.Deadline(); {
	case !ok:
		return errors.New("a memory call without a deadline")
	case m.fail != nil:
		return m.fail
	case m.kept == nil || m.kept.Ref != ref:
		return carrier.ErrCallUnknown
	case m.kept.Streamed:
		return carrier.ErrStreamOpened
	}
	m.kept.Streamed = true
	return nil
}

func answer(o Once, body string) (*httptest.ResponseRecorder, bool) {
	w := httptest.NewRecorder()
	first := o.AnswerOnce(w, httptest.NewRequest(http.MethodPost, "/voice", nil), "call-1", "key", []byte(body))
	return w, first
}

// The first answer is kept: a repeat before the stream opens gets it again (not acted on),
// a repeat after gets 409, and the stream opens once.
func TestAnswerOnceThenStreamOnce(t *testing.T) {
	mem := &oneCallMemory{}
	o := Once{Memory: mem, ContentType: "text/xml"}
	w, first := answer(o, "<first/>")
	if !first || w.Code != http.StatusOK || w.Body.String() != "<first/>" || w.Header().Get("Content-Type") != "text/xml" {
		t.Fatalf("first answer: first %v, %d %q %q", first, w.Code, w.Body, w.Header())
	}
	if w, first = answer(o, "<second/>"); first || w.Code != http.StatusOK || w.Body.String() != "<first/>" {
		t.Errorf("repeat before the stream: first %v, %d %q; want the kept answer", first, w.Code, w.Body)
	}
	if err := o.StreamOnce("call-2"); !errors.Is(err, carrier.ErrCallUnknown) {
		t.Errorf("stream of an unanswered call: %v", err)
	}
	if err := o.StreamOnce("call-1"); err != nil {
		t.Fatalf("first stream: %v", err)
	}
	if err := o.StreamOnce("call-1"); !errors.Is(err, ErrTokenReused) {
		t.Errorf("second stream: %v, want ErrTokenReused", err)
	}
	if w, first = answer(o, "<third/>"); first || w.Code != http.StatusConflict {
		t.Errorf("repeat after the stream opened: first %v, %d, want 409", first, w.Code)
	}
	// A carrier that answers by a REST command reads the same rule without HTTP.
	if _, outcome, err := o.RememberOnce(context.Background(), "call-1", "", nil); err != nil || outcome != Connected {
		t.Errorf("RememberOnce after the stream: %v, %v", outcome, err)
	}
}

// Without the memory a replay cannot be told from a call: 503, and the stream is refused
// as "try again later", not as a forgery.
func TestOnceRefusesWhenTheMemoryFails(t *testing.T) {
	o := Once{Memory: &oneCallMemory{fail: errors.New("database is down")}}
	if w, first := answer(o, "<x/>"); first || w.Code != http.StatusServiceUnavailable {
		t.Errorf("answer: first %v, %d, want 503", first, w.Code)
	}
	if _, _, err := o.RememberOnce(context.Background(), "call-1", "", nil); !errors.Is(err, ErrMemoryUnavailable) {
		t.Errorf("RememberOnce: %v", err)
	}
	if err := o.StreamOnce("call-1"); !errors.Is(err, ErrMemoryUnavailable) || errors.Is(err, ErrTokenReused) {
		t.Errorf("StreamOnce: %v", err)
	}
}
