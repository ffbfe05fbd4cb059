package phone

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/handset-voice/handset/internal/audio/g711"
)

// square is n bytes of mu-law square wave at ±level, whose RMS is level.
func square(n int, level int16) []byte {
	out := make([]byte, n)
	for i := range out {
		s := level
		if i%2 == 1 {
			s = -level
		}
		out[i] = g711.EncodeMulawSample(s)
	}
	return out
}

func played(start time.Duration, audio []byte) Event {
	return Event{Kind: AudioPlayed, Start: start, End: start + audioDuration(len(audio)), Bytes: len(audio), Audio: audio}
}

func TestSpeechThresholdIsAboutMinus45dBFS(t *testing.T) {
	soft := square(160, 103) // -50 dBFS: line noise, not speech
	loud := square(160, 328) // -40 dBFS: quiet speech
	silent := bytes.Repeat([]byte{g711.MulawSilence}, 160)
	if isSpeech(soft) || isSpeech(silent) {
		t.Error("-50 dBFS or silence counted as speech")
	}
	if !isSpeech(loud) || !isSpeech(tone(20*time.Millisecond, 0.3)) {
		t.Error("-40 dBFS or a tone not counted as speech")
	}
}

func TestSpeechSegmentsSplitOnGapsOf200ms(t *testing.T) {
	speech := tone(100*time.Millisecond, 0.3)
	quietGap := Silence(180 * time.Millisecond)
	s := Snapshot{Events: []Event{
		played(0, speech),                             // 0-100
		played(100*ms, quietGap),                      // silence 100-280: under 200 ms, joins
		played(280*ms, speech),                        // 280-380
		played(380*ms, Silence(200*time.Millisecond)), // 200 ms silence: splits
		played(580*ms, speech),                        // 580-680
		{Kind: AudioReceived, Audio: speech},          // ignored
		played(900*ms, speech[:400]),                  // no audio 680-900 (a gap ≥ 200 ms): splits; 900-950
	}}
	want := []SpeechSegment{{0, 380 * ms}, {580 * ms, 680 * ms}, {900 * ms, 950 * ms}}
	if d := cmp.Diff(want, s.SpeechSegments()); d != "" {
		t.Fatalf("SpeechSegments (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		from, to time.Duration
		want     bool
	}{
		{0, 10 * ms, true}, {380 * ms, 580 * ms, false}, {379 * ms, 381 * ms, true}, {680 * ms, 900 * ms, false}, {949 * ms, time.Hour, true},
	} {
		if got := s.HeardSpeech(tc.from, tc.to); got != tc.want {
			t.Errorf("HeardSpeech(%v, %v) = %t, want %t", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestSnapshotMarksMatchEchoesInOrder(t *testing.T) {
	s := Snapshot{Events: []Event{
		{Kind: MarkSent, Name: "a", At: 1 * ms},
		{Kind: MarkSent, Name: "a", At: 2 * ms},
		{Kind: MarkSent, Name: "b", At: 3 * ms},
		{Kind: MarkEchoed, Name: "a", At: 10 * ms},
		{Kind: Clear, At: 11 * ms},
		{Kind: MarkEchoed, Name: "a", At: 11 * ms, Cleared: true},
	}}
	want := []Mark{
		{Name: "a", Sent: 1 * ms, Echoed: true, EchoedAt: 10 * ms},
		{Name: "a", Sent: 2 * ms, Echoed: true, EchoedAt: 11 * ms, Cleared: true},
		{Name: "b", Sent: 3 * ms},
	}
	if d := cmp.Diff(want, s.Marks()); d != "" {
		t.Fatalf("Marks (-want +got):\n%s", d)
	}
	if s.Clears() != 1 {
		t.Fatalf("Clears = %d", s.Clears())
	}
}
