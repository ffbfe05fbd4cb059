package echo

import (
	"math"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
)

func TestEchoIsQuieterThanWhatWasSent(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	r := NewReference(0, 0)
	if r.Echo(t0, -60) {
		t.Fatal("nothing sent yet: nothing can be echo")
	}
	for i := range 25 { // half a second of agent audio at -20 dBFS
		r.Sent(t0.Add(time.Duration(i)*20*time.Millisecond), -20)
	}
	now := t0.Add(600 * time.Millisecond)
	tests := []struct {
		level float64
		echo  bool
	}{
		{-32, true},  // 12 dB down: the agent's voice coming back
		{-27, true},  // 7 dB down
		{-24, false}, // within the margin: treat as the caller
		{-18, false}, // louder than the agent: certainly the caller
	}
	for _, tt := range tests {
		if got := r.Echo(now, tt.level); got != tt.echo {
			t.Errorf("level %v dBFS: echo %v, want %v", tt.level, got, tt.echo)
		}
	}
	if r.Echo(t0.Add(2*time.Second), -40) {
		t.Error("audio sent more than the window ago still counts")
	}
}

func TestLevelDB(t *testing.T) {
	tone := audiotest.Tone(8000, 1000, 20*time.Millisecond, 0.5) // peak -6 dBFS, RMS -9
	if got := LevelDB(tone); math.Abs(got-(-9.03)) > 0.2 {
		t.Errorf("LevelDB(tone) = %.2f, want about -9.03", got)
	}
	if !math.IsInf(LevelDB(make([]int16, 160)), -1) {
		t.Error("silence should be -Inf")
	}
}

func BenchmarkEchoCheck20ms(b *testing.B) {
	t0 := time.Now()
	r := NewReference(0, 0)
	for i := range slots {
		r.Sent(t0.Add(time.Duration(i)*20*time.Millisecond), -20)
	}
	pcm := audiotest.SpeechLike(8000, 20*time.Millisecond, 1)
	now := t0.Add(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Echo(now, LevelDB(pcm))
	}
}
