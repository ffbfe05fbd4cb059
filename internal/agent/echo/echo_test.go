package echo

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readAll drains a reply stream and returns its chunks.
func readAll(t *testing.T, s voice.ReplyStream) []string {
	t.Helper()
	var out []string
	for range 1000 {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, c.Text)
	}
	t.Fatal("stream never ended")
	return nil
}

func TestReply(t *testing.T) {
	tests := []struct {
		name    string
		history []voice.Message
		want    []string
	}{
		{
			name:    "last user message",
			history: []voice.Message{{Role: voice.RoleUser, Content: "book a table for two"}},
			want:    []string{"You", " said:", " book", " a", " table", " for", " two."},
		},
		{
			name: "latest user turn wins, trailing punctuation and spaces folded",
			history: []voice.Message{
				{Role: voice.RoleSystem, Content: "be brief"},
				{Role: voice.RoleUser, Content: "first"},
				{Role: voice.RoleAssistant, Content: "You said: first."},
				{Role: voice.RoleUser, Content: "  what   time is it?  "},
			},
			want: []string{"You", " said:", " what", " time", " is", " it."},
		},
		{
			name:    "no user message",
			history: []voice.Message{{Role: voice.RoleSystem, Content: "hi"}},
			want:    strings.SplitAfter(Greeting, " "),
		},
		{
			name:    "empty user message",
			history: []voice.Message{{Role: voice.RoleUser, Content: " ... "}},
			want:    strings.SplitAfter(Greeting, " "),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New()
			s, err := a.Reply(t.Context(), voice.TurnRequest{History: tt.history})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := readAll(t, s)
			// Greeting split with SplitAfter puts the space after each word; compare text and count.
			if strings.Join(got, "") != strings.Join(tt.want, "") || len(got) != len(tt.want) {
				t.Errorf("chunks differ (-want +got):\n%s", cmp.Diff(tt.want, got))
			}
			if _, err := s.Next(); !errors.Is(err, io.EOF) {
				t.Errorf("Next after end = %v, want io.EOF", err)
			}
		})
	}
}

func TestName(t *testing.T) {
	if got := New().Name(); got != "echo" {
		t.Errorf("Name() = %q, want echo", got)
	}
}

func TestCancel(t *testing.T) {
	history := []voice.Message{{Role: voice.RoleUser, Content: "one two three four"}}

	t.Run("ctx cancelled mid-reply", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		s, err := New().Reply(ctx, voice.TurnRequest{History: history})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
		cancel()
		_, err = s.Next()
		if voice.KindOf(err) != voice.KindCanceled || !errors.Is(err, context.Canceled) {
			t.Errorf("Next after cancel = %v (kind %v), want canceled", err, voice.KindOf(err))
		}
	})
	t.Run("ctx already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := New().Reply(ctx, voice.TurnRequest{History: history}); voice.KindOf(err) != voice.KindCanceled {
			t.Errorf("Reply = %v, want canceled", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(t.Context(), time.Unix(0, 0))
		defer cancel()
		if _, err := New().Reply(ctx, voice.TurnRequest{History: history}); voice.KindOf(err) != voice.KindTimeout {
			t.Errorf("Reply = %v, want timeout", err)
		}
	})
	t.Run("Close", func(t *testing.T) {
		s, err := New().Reply(t.Context(), voice.TurnRequest{History: history})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		_, err = s.Next()
		if voice.KindOf(err) != voice.KindCanceled || !errors.Is(err, context.Canceled) {
			t.Errorf("Next after Close = %v, want canceled", err)
		}
	})
}
