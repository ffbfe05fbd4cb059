//go:build embedded

package sphinx

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/voice"
)

// Run: CGO_ENABLED=1 go test -tags embedded -run '^$' -bench . -benchtime 3x ./internal/stt/sphinx/
// (BenchmarkDecoderMemory reads the process's RSS: run it alone, -benchtime 1x, for the
// honest first-load figure.)

// benchAudio is the test material: the LibriVox recordings (human read speech, 35 s) and
// the caller lines spoken by flite slt (16 s), as 16 kHz utterances.
func benchAudio(b *testing.B, set string) [][]int16 {
	b.Helper()
	var out [][]int16
	switch set {
	case "librivox", "librivox-phone":
		recs := vadtest.Recordings(b)
		for _, r := range recs {
			if strings.HasPrefix(r.Name, "librivox/") {
				pcm := r.PCM
				if set == "librivox-phone" {
					pcm = phonePath(b, pcm)
				}
				out = append(out, pcm)
			}
		}
	case "flite":
		for _, line := range agentLines {
			out = append(out, flite(b, "slt", line))
		}
	}
	return out
}

// BenchmarkDecode is one decoder's real-time factor: decoding time over audio time, fed in
// 20 ms frames as a stream does (rtf 0.2 is five times faster than real time).
func BenchmarkDecode(b *testing.B) {
	requireModel(b)
	dec, err := newDecoder(DefaultModelDir)
	if err != nil {
		b.Fatal(err)
	}
	defer dec.close()
	for _, set := range []string{"flite", "librivox", "librivox-phone"} {
		b.Run(set, func(b *testing.B) {
			utts := benchAudio(b, set)
			var samples int
			for _, u := range utts {
				samples += len(u)
			}
			state := coldPriors()[16000]
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				for _, u := range utts {
					_, state = decodeWith(b, dec, state, u)
				}
			}
			elapsed := time.Since(start)
			b.ReportMetric(elapsed.Seconds()/(float64(b.N)*durationOf(samples).Seconds()), "rtf")
			b.ReportMetric(durationOf(samples).Seconds(), "audio-s/op")
		})
	}
}

// BenchmarkFinalize is the time from Finalize to the Final on a stream that has heard
// the whole utterance: what the caller waits for after the engine's VAD hangover.
func BenchmarkFinalize(b *testing.B) {
	r := newReal(b, 1)
	for _, f := range []audio.Format{wide, audio.Telephone} {
		b.Run(f.String(), func(b *testing.B) {
			utts := benchAudio(b, "flite")
			var total, worst time.Duration
			n := 0
			b.ResetTimer()
			for range b.N {
				for _, u := range utts {
					b.StopTimer()
					rs, err := r.Stream(context.Background(), f, voice.StreamOptions{})
					if err != nil {
						b.Fatal(err)
					}
					s := rs.(*stream)
					data := encode(b, f, cat(quiet(300*time.Millisecond), u))
					for len(data) > 0 {
						k := min(f.FrameBytes(), len(data))
						_ = s.Write(data[:k])
						data = data[k:]
					}
					for {
						s.mu.Lock()
						idle := s.in.empty() && !s.busy.Load()
						s.mu.Unlock()
						if idle {
							break
						}
						time.Sleep(time.Millisecond)
					}
					b.StartTimer()
					start := time.Now()
					_ = s.Finalize()
					for tr := range s.Results() {
						if tr.Final {
							break
						}
					}
					d := time.Since(start)
					b.StopTimer()
					total += d
					worst = max(worst, d)
					n++
					_ = s.Close()
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(total.Microseconds())/float64(n)/1000, "ms/final")
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms/final")
		})
	}
}

// BenchmarkDecoderMemory is the resident memory a decoder costs: the growth of the
// process's RSS when New loads one decoder, then three more.
func BenchmarkDecoderMemory(b *testing.B) {
	requireModel(b)
	for range b.N {
		before := rssMB(b)
		one, err := New(Options{Decoders: 1})
		if err != nil {
			b.Fatal(err)
		}
		first := rssMB(b) - before
		more, err := New(Options{Decoders: 3})
		if err != nil {
			b.Fatal(err)
		}
		each := (rssMB(b) - before - first) / 3
		_ = more.Close()
		_ = one.Close()
		b.ReportMetric(first, "MB-first")
		b.ReportMetric(each, "MB/decoder")
	}
}

// rssMB is the process's resident set size in MB (from /proc/self/status).
func rssMB(b *testing.B) float64 {
	b.Helper()
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err) // not a peer: a platform without /proc
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
