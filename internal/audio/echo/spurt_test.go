package echo_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/audio/vad/webrtc"
)

// talkspurt is audio Handset sent after a pause, and how much later than the first
// talkspurt the carrier played it (a carrier starts each talkspurt when it arrives, and the
// network's delay to it varies).
type talkspurt struct {
	at    time.Duration // when Handset sent it
	audio []int16
	late  time.Duration
}

// TestTalkspurtsPlayingEarlierOrLater: a greeting in two sentences and a reply, each played
// by the carrier up to 100 ms earlier or later than the one before (more than the
// suppressor's ±40 ms of lags), over a 6 and a 12 dB echo after 60 to 400 ms, into the
// WebRTC VAD: the agent never sets it off on its own echo, and a caller at -26 dBFS
// talking over the reply is heard within 500 ms of their onset.
func TestTalkspurtsPlayingEarlierOrLater(t *testing.T) {
	wasm, err := os.ReadFile(vadtest.EngineFile(t, "fvad.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := webrtc.NewEngine(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	voices := map[string]func(time.Duration, int64) []int16{
		"tone words": func(d time.Duration, _ int64) []int16 { return toneWords(int(d * rate / time.Second)) },
		"speech-like": func(d time.Duration, seed int64) []int16 {
			return audiotest.AtPeakFrame(audiotest.SpeechLike(rate, d, seed), rate, audiotest.TTSPeakFrameDBFS)
		},
	}
	caller := audiotest.AtActiveLevel(audiotest.SpeechLike(rate, 1500*time.Millisecond, 11), rate, audiotest.CallerActiveDBFS)
	callerAt := 9500 * time.Millisecond
	for name, voice := range voices {
		for _, loss := range []float64{6, 12} {
			for _, delay := range []time.Duration{60 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
				for _, late := range [][3]int{{0, 100, 0}, {0, -40, 60}, {0, 60, -40}, {0, 0, 100}, {0, 7, -13}, {0, 13, 3}, {0, -3, 17}} {
					spurts := []talkspurt{
						{at: 200 * time.Millisecond, audio: voice(2*time.Second, 1), late: ms(late[0])},
						{at: 2300 * time.Millisecond, audio: voice(1500*time.Millisecond, 2), late: ms(late[1])},
						{at: 6 * time.Second, audio: voice(6*time.Second, 3), late: ms(late[2])},
					}
					d, err := eng.NewDetector(webrtc.Config{Rate: rate})
					if err != nil {
						t.Fatal(err)
					}
					starts, l := runSpurts(spurts, loss, delay, caller, callerAt, d)
					d.Close()
					cell := fmt.Sprintf("%s, loss %v dB, delay %v, talkspurts later by %v/%v/%v", name, loss, delay, ms(late[0]), ms(late[1]), ms(late[2]))
					heard := time.Duration(-1)
					for _, s := range starts {
						if s < callerAt {
							t.Errorf("%s: the VAD started at %v on the agent's own echo (path %+v)", cell, s, l.Estimate())
						} else if heard < 0 {
							heard = s - callerAt
						}
					}
					if loss >= 12 && (heard < 0 || heard > 500*time.Millisecond) {
						t.Errorf("%s: the caller heard after %v, want within 500ms (path %+v)", cell, heard, l.Estimate())
					}
				}
			}
		}
	}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// runSpurts plays the talkspurts over an echo path, with the caller from callerAt, and
// returns when the VAD started.
func runSpurts(spurts []talkspurt, lossDB float64, delay time.Duration, caller []int16, callerAt time.Duration, d vad.Detector) ([]time.Duration, *echo.Line) {
	n := func(d time.Duration) int { return int(d * rate / time.Second) }
	last := spurts[len(spurts)-1]
	total := n(last.at) + len(last.audio) + rate
	mic := make([]float64, total)
	g := math.Pow(10, -lossDB/20)
	for _, s := range spurts {
		for i, v := range s.audio {
			if j := n(s.at+s.late+delay) + i; j >= 0 && j < total {
				mic[j] += g * float64(v)
			}
		}
	}
	for i, v := range caller {
		if j := n(callerAt) + i; j < total {
			mic[j] += float64(v)
		}
	}
	noise := audiotest.WhiteNoise(rate, time.Duration(total)*time.Second/rate, -66, 9)
	pcm := make([]int16, total)
	for i := range mic {
		pcm[i] = g711.DecodeMulawSample(g711.EncodeMulawSample(int16(max(-32768, min(32767, mic[i]+float64(noise[i]))))))
	}
	l, _ := echo.NewLine(rate, 0)
	out := make([]int16, 160)
	var starts []time.Duration
	for i := 0; i+160 <= total; i += 160 {
		for _, s := range spurts { // sent as it plays, as the playout does
			if off := i - n(s.at); off >= 0 && off < len(s.audio) {
				l.Played(int64(i), s.audio[off:min(off+160, len(s.audio))])
			}
		}
		res, _ := l.Process(pcm[i:i+160], out)
		if d.Process(res) == vad.SpeechStart {
			starts = append(starts, time.Duration(i+160)*time.Second/rate)
		}
	}
	return starts, l
}

// TestCallerHeardWhileATalkspurtSettles: a quiet caller (-34 dBFS) talks over the agent
// 150 ms after a new sentence started playing (after a pause, and 60 ms later than the
// sentence before it), over a 12 and a 20 dB echo: the VAD hears them within 500 ms of their
// onset while that talkspurt settles, and never starts on the echo before.
func TestCallerHeardWhileATalkspurtSettles(t *testing.T) {
	wasm, err := os.ReadFile(vadtest.EngineFile(t, "fvad.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := webrtc.NewEngine(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	agent := func(d time.Duration, seed int64) []int16 {
		return audiotest.AtPeakFrame(audiotest.SpeechLike(rate, d, seed), rate, audiotest.TTSPeakFrameDBFS)
	}
	caller := audiotest.AtActiveLevel(audiotest.SpeechLike(rate, 1500*time.Millisecond, 11), rate, audiotest.QuietCallerDBFS)
	for _, loss := range []float64{12, 20} {
		for _, delay := range []time.Duration{60 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
			spurts := []talkspurt{
				{at: 200 * time.Millisecond, audio: agent(2*time.Second, 1)},
				{at: 4 * time.Second, audio: agent(2*time.Second, 2)},
				{at: 6050 * time.Millisecond, audio: agent(3*time.Second, 3), late: 60 * time.Millisecond},
			}
			callerAt := 6050*time.Millisecond + delay + 60*time.Millisecond + 150*time.Millisecond
			d, err := eng.NewDetector(webrtc.Config{Rate: rate})
			if err != nil {
				t.Fatal(err)
			}
			starts, l := runSpurts(spurts, loss, delay, caller, callerAt, d)
			d.Close()
			cell := fmt.Sprintf("loss %v dB, delay %v", loss, delay)
			heard := time.Duration(-1)
			for _, s := range starts {
				if s < callerAt {
					t.Errorf("%s: the VAD started at %v on the agent's own echo (path %+v)", cell, s, l.Estimate())
				} else if heard < 0 {
					heard = s - callerAt
				}
			}
			if heard < 0 || heard > 500*time.Millisecond {
				t.Errorf("%s: the caller heard after %v, want within 500ms (path %+v)", cell, heard, l.Estimate())
			}
			t.Logf("%s: the caller heard after %v", cell, heard)
		}
	}
}
