package audio

import (
	"testing"
	"time"
)

func TestFrameBytes(t *testing.T) {
	cases := []struct {
		f    Format
		want int
	}{
		{Telephone, 160},
		{Format{Alaw, 8000}, 160},
		{Format{PCM16, 8000}, 320},
		{Format{PCM16, 16000}, 640},
		{Format{PCM16, 24000}, 960},
		{Format{PCM16, 48000}, 1920},
	}
	for _, c := range cases {
		if got := c.f.FrameBytes(); got != c.want {
			t.Errorf("%v.FrameBytes() = %d, want %d", c.f, got, c.want)
		}
		if got := c.f.Duration(c.f.FrameBytes()); got != FrameDuration {
			t.Errorf("%v.Duration(FrameBytes) = %v, want %v", c.f, got, FrameDuration)
		}
		if got := c.f.Bytes(FrameDuration); got != c.want {
			t.Errorf("%v.Bytes(20ms) = %d, want %d", c.f, got, c.want)
		}
	}
}

func TestDuration(t *testing.T) {
	cases := []struct {
		f    Format
		n    int
		want time.Duration
	}{
		{Telephone, 8000, time.Second},
		{Telephone, 1, 125 * time.Microsecond},
		{Format{PCM16, 16000}, 32000, time.Second},
		{Format{PCM16, 16000}, 3, 62500 * time.Nanosecond}, // odd byte ignored
		{Format{PCM16, 24000}, 48, time.Millisecond},
		{Format{PCM16, 0}, 100, 0},
		{Telephone, 0, 0},
	}
	for _, c := range cases {
		if got := c.f.Duration(c.n); got != c.want {
			t.Errorf("%v.Duration(%d) = %v, want %v", c.f, c.n, got, c.want)
		}
	}
}

func TestBytes(t *testing.T) {
	cases := []struct {
		f    Format
		d    time.Duration
		want int
	}{
		{Telephone, time.Second, 8000},
		{Format{PCM16, 16000}, time.Second, 32000},
		{Format{PCM16, 16000}, 100 * time.Microsecond, 2},   // 1.6 samples -> 1
		{Format{PCM16, 48000}, 10 * time.Microsecond, 0},    // 0.48 samples -> 0
		{Format{PCM16, 8000}, 90 * time.Minute, 86_400_000}, // no overflow for long calls
	}
	for _, c := range cases {
		if got := c.f.Bytes(c.d); got != c.want {
			t.Errorf("%v.Bytes(%v) = %d, want %d", c.f, c.d, got, c.want)
		}
	}
}

func TestStrings(t *testing.T) {
	if got := Telephone.String(); got != "mulaw/8000" {
		t.Errorf("Telephone.String() = %q", got)
	}
	if got := (Format{PCM16, 16000}).String(); got != "pcm16/16000" {
		t.Errorf("String() = %q", got)
	}
	if got := Alaw.String(); got != "alaw" {
		t.Errorf("Alaw.String() = %q", got)
	}
	if got := Encoding(9).String(); got != "encoding(9)" {
		t.Errorf("Encoding(9).String() = %q", got)
	}
}
