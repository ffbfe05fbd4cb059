package echo_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/vad"
)

// lineCase is one simulated line: the agent speaks from 0.2 s; the caller (if any) starts
// at callerAt.
type lineCase struct {
	lossDB   float64 // echo return loss; +Inf: no echo
	delay    time.Duration
	callerDB float64 // active level; -Inf: the caller stays silent
	caller   []int16
	agent    []int16
}

const rate = 8000

// runLine feeds the line through a Line into d and returns the times of every SpeechStart.
func runLine(t testing.TB, c lineCase, d vad.Detector) (starts []time.Duration, l *echo.Line) {
	frame := rate / 50
	total := len(c.agent) + rate
	ref := make([]int16, total)
	copy(ref[rate/5:], c.agent)
	mic := make([]float64, total)
	if !math.IsInf(c.lossDB, 1) {
		g := math.Pow(10, -c.lossDB/20)
		dn := int(c.delay * rate / time.Second)
		for i := dn; i < total; i++ {
			mic[i] += g * float64(ref[i-dn])
		}
	}
	callerAt := 5 * rate / 2
	if !math.IsInf(c.callerDB, -1) {
		voice := audiotest.AtActiveLevel(c.caller, rate, c.callerDB)
		for i, s := range voice {
			if callerAt+i < total {
				mic[callerAt+i] += float64(s)
			}
		}
	}
	noise := audiotest.WhiteNoise(rate, time.Duration(total)*time.Second/rate, -66, 9)
	pcm := make([]int16, total)
	for i := range mic {
		v := mic[i] + float64(noise[i])
		pcm[i] = g711.DecodeMulawSample(g711.EncodeMulawSample(int16(max(-32768, min(32767, v)))))
	}
	l, err := echo.NewLine(rate, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int16, frame)
	for i := 0; i+frame <= total; i += frame {
		l.Played(int64(i), ref[i:i+frame])
		res, _ := l.Process(pcm[i:i+frame], out)
		if d.Process(res) == vad.SpeechStart {
			starts = append(starts, time.Duration(i+frame)*time.Second/rate)
		}
	}
	return starts, l
}

// TestLineAtPhoneLevels: a speech-like agent voice normalised like a cloud TTS, over lines
// with no echo and echo at 6 to 30 dB return loss after 60 to 400 ms, into the energy VAD.
// The agent never sets it off on its own echo, and a caller at -20, -26 or -34 dBFS is
// heard promptly wherever the echo is at least 20 dB down (the whole-call matrix in the
// cli package holds the 12 dB promise with a carrier's timing; here the line is exact).
func TestLineAtPhoneLevels(t *testing.T) {
	agent := audiotest.AtPeakFrame(audiotest.SpeechLike(rate, 6*time.Second, 3), rate, audiotest.TTSPeakFrameDBFS)
	caller := audiotest.SpeechLike(rate, 2*time.Second, 11)
	onset := 2500 * time.Millisecond
	for _, loss := range []float64{math.Inf(1), 6, 12, 20, 30} {
		for _, delay := range []time.Duration{60 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
			for _, lvl := range []float64{math.Inf(-1), audiotest.LoudCallerDBFS, audiotest.CallerActiveDBFS, audiotest.QuietCallerDBFS} {
				d, _ := vad.NewEnergy(vad.EnergyConfig{Rate: rate})
				starts, l := runLine(t, lineCase{lossDB: loss, delay: delay, callerDB: lvl, caller: caller, agent: agent}, d)
				falses, hit := 0, time.Duration(-1)
				for _, s := range starts {
					if s < onset && s > 700*time.Millisecond { // after the barge-in gate
						falses++
					} else if s >= onset && hit < 0 {
						hit = s - onset
					}
				}
				name := fmt.Sprintf("loss %v dB, delay %v, caller %v dBFS", loss, delay, lvl)
				if falses > 0 {
					t.Errorf("%s: %d false starts on the agent's own echo", name, falses)
				}
				if !math.IsInf(lvl, -1) && (loss >= 20) && (hit < 0 || hit > 500*time.Millisecond) {
					t.Errorf("%s: caller heard after %v, want within 500ms (path %+v)", name, hit, l.Estimate())
				}
				if e := l.Estimate(); !math.IsInf(loss, 1) && math.IsInf(lvl, -1) &&
					(!e.Echo || math.Abs(e.DelayMS-float64(delay/time.Millisecond)) > 10) {
					t.Errorf("%s: learned %+v, want the echo at its delay", name, e)
				}
				t.Logf("%s: heard after %v, learned %+v", name, hit, l.Estimate())
			}
		}
	}
}

// learnedLine is a line that has learned a 12 dB echo path 120 ms long (a phone line's) of a
// speech-like agent voice, with that voice and its echo, and the inbound position reached.
func learnedLine() (l *echo.Line, agent, mic, out []int16, pos int64) {
	return learnedOver(func(agent []int16) []int16 {
		delay := rate * 120 / 1000
		return append(make([]int16, delay), audiotest.Gain(agent, -12)[:len(agent)-delay]...)
	})
}

// learnedOver is a line that has learned the path of a speech-like agent voice to what
// micOf says the line returns of it, with the voice, that return, and the inbound
// position reached.
func learnedOver(micOf func(agent []int16) []int16) (l *echo.Line, agent, mic, out []int16, pos int64) {
	agent = audiotest.AtPeakFrame(audiotest.SpeechLike(rate, 4*time.Second, 3), rate, audiotest.TTSPeakFrameDBFS)
	mic = micOf(agent)
	l, _ = echo.NewLine(rate, 0)
	out = make([]int16, 160)
	for i := 0; i+160 <= len(agent); i += 160 { // learn the path first
		l.Played(int64(i), agent[i:i+160])
		l.Process(mic[i:i+160], out)
	}
	return l, agent, mic, out, int64(len(agent))
}

// benchSpeaking measures a frame of the agent speaking on, with mic coming back.
func benchSpeaking(b *testing.B, l *echo.Line, agent, mic, out []int16, pos int64) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.Played(pos, agent[i:i+160])
		l.Process(mic[i:i+160], out)
		pos += 160
		i = (i + 160) % (len(agent) - 160)
	}
}

// BenchmarkProcess20ms is the per-frame cost while the agent speaks over a 12 dB echo
// path: the envelopes, the delay search, the canceller and the spectral suppression.
func BenchmarkProcess20ms(b *testing.B) {
	l, agent, mic, out, pos := learnedLine()
	benchSpeaking(b, l, agent, mic, out, pos)
}

// BenchmarkProcess20msSettling is the per-frame cost while each talkspurt settles: the agent
// pauses every half second, so the suppressor compares, and votes over, the wide span.
func BenchmarkProcess20msSettling(b *testing.B) {
	l, agent, mic, out, pos := learnedLine()
	b.ReportAllocs()
	i, frame := 0, 0
	for b.Loop() {
		if frame++; frame%25 != 0 { // a pause of one frame: the next audio is a new talkspurt
			l.Played(pos, agent[i:i+160])
		}
		l.Process(mic[i:i+160], out)
		pos += 160
		i = (i + 160) % (len(agent) - 160)
	}
}
