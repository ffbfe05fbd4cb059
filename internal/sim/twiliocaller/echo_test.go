package twiliocaller

import (
	"bytes"
	"math"
	"math/cmplx"
	"strconv"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/g711"
)

// inbound reads the caller's media frames up to and including the one with timestamp
// until, appending their audio to got: byte k of the result is stream time k×125 µs.
func inbound(t *testing.T, fs *fakeStream, got []byte, until time.Duration) []byte {
	t.Helper()
	for len(got) < audioBytes(until+20*ms) {
		m, ok := fs.next()
		if !ok {
			t.Fatalf("stream ended after %v of caller audio", audioDuration(len(got)))
		}
		if m.Event != "media" {
			continue
		}
		if want := strconv.Itoa(len(got) / bytesPerMs); m.Media.Timestamp != want {
			t.Fatalf("media frame at %s ms, want %s ms", m.Media.Timestamp, want)
		}
		got = append(got, payloadOf(t, m)...)
	}
	return got
}

// sine is d of a hz sine at amp of full scale, as 8 kHz mu-law.
func sine(d time.Duration, hz, amp float64) []byte {
	out := make([]byte, audioBytes(d))
	for i := range out {
		out[i] = g711.EncodeMulawSample(int16(amp * 32767 * math.Sin(2*math.Pi*hz*float64(i)/8000)))
	}
	return out
}

func decode(mulaw []byte) []float64 {
	out := make([]float64, len(mulaw))
	for i, b := range mulaw {
		out[i] = float64(g711.DecodeMulawSample(b))
	}
	return out
}

// levelDB is the RMS of mulaw in dB full scale.
func levelDB(mulaw []byte) float64 {
	var sum float64
	for _, v := range decode(mulaw) {
		sum += v * v
	}
	return 10 * math.Log10(sum/float64(len(mulaw))/(32768*32768))
}

// amplitude is the peak amplitude of mulaw's component at hz, measured over a whole number
// of cycles.
func amplitude(mulaw []byte, hz float64) float64 {
	var sum complex128
	for i, v := range decode(mulaw) {
		sum += complex(v, 0) * cmplx.Exp(complex(0, -2*math.Pi*hz*float64(i)/8000))
	}
	return 2 * cmplx.Abs(sum) / float64(len(mulaw))
}

// expectedEcho is what the line returns for played alone: each sample scaled by gainDB.
func expectedEcho(played []byte, gainDB float64) []byte {
	g := math.Pow(10, gainDB/20)
	out := make([]byte, len(played))
	for i, b := range played {
		out[i] = g711.EncodeMulawSample(int16(math.Round(float64(g711.DecodeMulawSample(b)) * g)))
	}
	return out
}

// silentExcept fails unless got is mu-law silence outside [from, to).
func silentExcept(t *testing.T, got []byte, from, to int) {
	t.Helper()
	for k, b := range got {
		if (k < from || k >= to) && b != g711.MulawSilence {
			t.Fatalf("caller audio at %v is %#x, want silence outside [%v, %v)", audioDuration(k), b, audioDuration(from), audioDuration(to))
		}
	}
}

func TestEchoReturnsWhatPlayedDelayedAndQuieter(t *testing.T) {
	const delay, gainDB = 120 * ms, -12.0
	played := tone(500*ms, 0.5)
	for _, echo := range []bool{true, false} {
		t.Run("echo="+strconv.FormatBool(echo), func(t *testing.T) {
			f := newFakeHandset(t)
			clk := newFakeClock()
			c, fs := dial(t, f, func(o *Options) {
				o.Clock = clk
				if echo {
					o.Echo = &EchoOptions{Delay: delay, GainDB: gainDB}
				}
			})
			// Handset's tone arrives at 105 ms, between frames, and plays at once.
			clk.Advance(105 * ms)
			got := inbound(t, fs, nil, 100*ms)
			fs.sendMedia(played)
			waitFor(t, c, "the tone", countAtLeast(AudioReceived, 1))
			clk.Advance(time.Second)
			got = inbound(t, fs, got, 1100*ms)

			s := c.Snapshot()
			if p := s.Filter(AudioPlayed); len(p) == 0 || p[0].Start != 105*ms || !bytes.Equal(s.PlayedAudio(), played) {
				t.Fatalf("playback: %v", s)
			}
			if !echo {
				silentExcept(t, got, 0, 0)
				return
			}
			from := audioBytes(105*ms + delay)
			to := from + len(played)
			silentExcept(t, got, from, to)
			// Where: the lag that best matches the tone, searched a frame either side.
			best, bestScore := 0, math.Inf(-1)
			ref := decode(played)
			for lag := from - pieceBytes; lag <= from+pieceBytes; lag++ {
				var score float64
				for i, v := range decode(got[lag : lag+len(played)]) {
					score += v * ref[i]
				}
				if score > bestScore {
					best, bestScore = lag, score
				}
			}
			if best != from {
				t.Errorf("echo at %v, want %v (played at 105 ms, delay %v)", audioDuration(best), audioDuration(from), delay)
			}
			// How loud, measured apart from how the echo is made.
			if d := levelDB(got[from:to]) - levelDB(played); math.Abs(d-gainDB) > 0.5 {
				t.Errorf("echo is %.2f dB from what played, want %.1f", d, gainDB)
			}
			// Sample for sample, the played audio scaled.
			if !bytes.Equal(got[from:to], expectedEcho(played, gainDB)) {
				t.Error("echo differs from the played audio scaled by the gain")
			}
		})
	}
}

func TestEchoFollowsTheWallClock(t *testing.T) {
	const delay = 60 * ms
	f := newFakeHandset(t)
	c, fs := dial(t, f, func(o *Options) { o.Echo = &EchoOptions{Delay: delay, GainDB: -6} })
	played := tone(200*ms, 0.5)
	fs.sendMedia(played)
	waitFor(t, c, "the tone to play", func(s Snapshot) bool { return len(s.PlayedAudio()) == len(played) })
	start := c.Snapshot().Filter(AudioPlayed)[0].Start
	got := inbound(t, fs, nil, start+delay+300*ms)
	// The tone's first sample is zero; its second is the first to echo.
	onset := -1
	for k, b := range got {
		if b != g711.MulawSilence {
			onset = k
			break
		}
	}
	want := start + delay + 125*time.Microsecond
	if onset < 0 || (audioDuration(onset)-want).Abs() > 20*ms {
		t.Fatalf("echo begins at %v, want %v within a frame", audioDuration(onset), want)
	}
	if d := levelDB(got[onset:onset+len(played)-1]) - levelDB(played); math.Abs(d+6) > 1 {
		t.Errorf("echo is %.2f dB from what played, want -6", d)
	}
}

func TestClearedAudioDoesNotEcho(t *testing.T) {
	const delay, gainDB = 120 * ms, -10.0
	f := newFakeHandset(t)
	clk := newFakeClock()
	c, fs := dial(t, f, func(o *Options) { o.Clock = clk; o.Echo = &EchoOptions{Delay: delay, GainDB: gainDB} })
	got := inbound(t, fs, nil, 0)
	sent := tone(time.Second, 0.5)
	fs.sendMedia(sent)
	waitFor(t, c, "the tone", countAtLeast(AudioReceived, 1))
	// 310 ms in, Handset clears: the piece playing since 300 ms is cut after 10 ms.
	clk.Advance(310 * ms)
	fs.sendClear()
	waitFor(t, c, "the clear", func(s Snapshot) bool { return s.Clears() == 1 })
	clk.Advance(time.Second)
	got = inbound(t, fs, got, 1300*ms)

	played := c.PlayedAudio()
	if !bytes.Equal(played, sent[:audioBytes(310*ms)]) {
		t.Fatalf("played %v, want the 310 ms before the clear", audioDuration(len(played)))
	}
	from := audioBytes(delay)
	silentExcept(t, got, from, from+len(played))
	if !bytes.Equal(got[from:from+len(played)], expectedEcho(played, gainDB)) {
		t.Error("echo differs from what played before the clear, scaled by the gain")
	}
}

func TestCallerSpeechIsMixedWithTheEcho(t *testing.T) {
	const gainDB = -12.0
	f := newFakeHandset(t)
	clk := newFakeClock()
	c, fs := dial(t, f, func(o *Options) { o.Clock = clk; o.Echo = &EchoOptions{GainDB: gainDB} }) // default delay
	got := inbound(t, fs, nil, 0)
	agent := tone(time.Second, 0.5) // 440 Hz
	fs.sendMedia(agent)
	waitFor(t, c, "the agent's audio", countAtLeast(AudioReceived, 1))
	said := sine(400*ms, 1000, 0.3)
	done := c.Say(said) // frames 20..400 ms; the echo comes from 120 ms
	clk.Advance(time.Second)
	got = inbound(t, fs, got, time.Second)
	<-done

	speechAt := audioBytes(20 * ms)
	echoAt := audioBytes(DefaultEchoDelay)
	if !bytes.Equal(got[speechAt:echoAt], said[:echoAt-speechAt]) {
		t.Error("the caller's speech before the echo arrives is not sent unchanged")
	}
	// Over 200..400 ms both are there at their own levels.
	both := got[audioBytes(200*ms):audioBytes(400*ms)]
	for _, tc := range []struct {
		what      string
		hz, level float64
	}{
		{"caller", 1000, 0.3 * 32767},
		{"echo", 440, 0.5 * 32767 * math.Pow(10, gainDB/20)},
	} {
		if d := 20 * math.Log10(amplitude(both, tc.hz)/tc.level); math.Abs(d) > 0.5 {
			t.Errorf("%s at %v Hz is %.2f dB off its level", tc.what, tc.hz, d)
		}
	}
	// After the caller stops, the echo alone.
	end := speechAt + len(said)
	if !bytes.Equal(got[end:audioBytes(time.Second)], expectedEcho(agent[end-echoAt:audioBytes(time.Second)-echoAt], gainDB)) {
		t.Error("echo after the caller stopped differs from the agent's audio scaled")
	}
}
