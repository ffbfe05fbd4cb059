//go:build embedded

package cli

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/recording"
	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// A real SIP phone (baresip) that offers only G.722 calls Handset, which allows G722: the
// call runs wideband both ways through baresip's own G.722 codec (an implementation
// independent of Handset's). The question baresip plays at 16 kHz reaches the agent, and
// baresip records the greeting and the answer at G.722's 16 kHz, where PocketSphinx hears
// them.
func TestBaresipCallsHandsetInG722(t *testing.T) {
	testpeer.Slow(t, "a real-time G.722 call between baresip and handset serve")
	r, trunk := startServeSIP(t, nil, "HANDSET_SIP_CODECS=G722,PCMU,PCMA", "HANDSET_STT=sphinx", "HANDSET_TTS=flite",
		"HANDSET_SPHINX_DECODERS=1", "HANDSET_VAD=webrtc", "HANDSET_ENGINES_DIR="+repoEngines(t),
		"HANDSET_FIRST_MESSAGE=Hello, how can I help you today?", "HANDSET_RECORD=true")
	source := writeBaresipQuestion(t, t.TempDir(), 16000)
	b, err := sippeer.StartBaresip(t, sippeer.BaresipOptions{Source: source, User: "wideband", Codecs: []string{"G722"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := b.Dial("sip:handset@" + trunk.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitEstablished(ctx); err != nil {
		t.Fatalf("%v\nbaresip:\n%s\nhandset:\n%s", err, b.Log(), r.logs.String())
	}
	// Recorded at G.722's 16 kHz, or the call did not run in G.722.
	finishBaresipCall(t, ctx, r, b, 16000, "in G.722")
	// What baresip decoded (spandsp's G.722, not Handset's) against what Handset sent
	// (the agent's channel of its own recording, before encoding): the encoder is right
	// only if the two match to within what 64 kbit/s G.722 loses.
	path, err := b.Recording()
	if err != nil {
		t.Fatal(err)
	}
	heard, _ := readPCM16WAV(t, path)
	recordings, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*", recording.FileName))
	if len(recordings) != 1 {
		t.Fatalf("%d recordings of the call, want 1", len(recordings))
	}
	sent, rate := agentChannel(t, recordings[0])
	if rate != 16000 {
		t.Fatalf("Handset recorded the call at %d Hz, want G.722's 16000", rate)
	}
	snrs := alignedSNRs(sent, heard, rate)
	if len(snrs) < 8 {
		t.Fatalf("only %d quarter seconds of the agent's speech to compare", len(snrs))
	}
	slices.Sort(snrs)
	median := snrs[len(snrs)/2]
	t.Logf("the agent's speech as baresip decoded it, a quarter second at a time: %.1f dB SNR (median %.1f)", snrs, median)
	// Measured: a median of 34-36 dB a second; the encoder's QMF one tap off gave 20 dB,
	// and the call still sounded like speech.
	if median < 28 {
		t.Errorf("baresip's decoding of Handset's G.722 matches what was sent at %.1f dB SNR (median of %d quarter seconds), want 28 dB or more", median, len(snrs))
	}
}

// agentChannel reads the agent's (right) channel of a Handset recording: a two-channel
// 16-bit PCM WAV file, and its rate.
func agentChannel(t *testing.T, path string) ([]int16, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 44 || string(b[:4]) != "RIFF" || binary.LittleEndian.Uint16(b[22:]) != 2 || binary.LittleEndian.Uint16(b[34:]) != 16 {
		t.Fatalf("%s is not a two-channel 16-bit WAV recording", path)
	}
	rate := int(binary.LittleEndian.Uint32(b[24:]))
	data := b[44:]
	pcm := make([]int16, len(data)/4)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(data[4*i+2:]))
	}
	return pcm, rate
}

// alignedSNRs compares heard with sent a quarter second at a time, over the quarters where
// sent holds speech: each is matched with heard at the delay where they correlate best (up
// to 600 ms later for the first; within 40 ms of the last one found for the rest, as a
// jitter buffer moves it a little between talkspurts), and heard scaled by the best gain;
// the result is the signal-to-noise ratio of each quarter, in dB.
func alignedSNRs(sent, heard []int16, rate int) []float64 {
	n := rate / 4
	lo, hi := 0, rate*600/1000
	var snrs []float64
	for from := 0; from+n <= len(sent); from += n {
		win := sent[from : from+n]
		if echo.LevelDB(win) < -40 {
			continue
		}
		best, bestLag := -1.0, -1
		var sxx float64
		for _, v := range win {
			sxx += float64(v) * float64(v)
		}
		for lag := lo; lag <= hi && from+lag+n <= len(heard); lag++ {
			var sxy, syy float64
			for i, v := range win {
				h := float64(heard[from+lag+i])
				sxy += float64(v) * h
				syy += h * h
			}
			if syy == 0 {
				continue
			}
			if c := sxy / math.Sqrt(sxx*syy); c > best {
				best, bestLag = c, lag
			}
		}
		if bestLag < 0 {
			continue
		}
		lo, hi = max(0, bestLag-rate/25), bestLag+rate/25
		// The best gain g (least squares) and what is left of sent after g·heard.
		var sxy, syy float64
		for i, v := range win {
			h := float64(heard[from+bestLag+i])
			sxy += float64(v) * h
			syy += h * h
		}
		g := sxy / syy
		var noise float64
		for i, v := range win {
			d := float64(v) - g*float64(heard[from+bestLag+i])
			noise += d * d
		}
		snrs = append(snrs, 10*math.Log10(sxx/max(noise, 1)))
	}
	return snrs
}
