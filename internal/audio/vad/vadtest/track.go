package vadtest

import (
	"math"
	"slices"
	"time"
)

// FrameDuration is the harness's frame: labels, scores and Process calls are all per 20 ms,
// the media frame.
const FrameDuration = 20 * time.Millisecond

// Labelling parameters; see the package comment.
const (
	labelFloorQuantile = 0.10 // a recording's noise floor: this quantile of its frame levels
	labelAboveFloorDB  = 15.0 // speech is this far above the floor...
	labelBelowPeakDB   = 35.0 // ...and no further than this below the recording's peak
	labelPeakQuantile  = 0.98
	labelMinRun        = 2 // frames: shorter bursts (clicks, lip smacks) are not speech
	labelHangover      = 5 // frames (100 ms) kept after each speech frame
	labelPreOnset      = 1 // frames (20 ms) added before each burst
)

// Span is a run of frames [Start, End).
type Span struct{ Start, End int }

// Track is a test signal with the truth for each 20 ms frame.
type Track struct {
	Rate int
	PCM  []int16
	// Speech says, for each whole 20 ms frame of PCM, whether it is speech.
	Speech []bool
	// Utterances are the frames from the first to the last speech frame of each recording.
	Utterances []Span
}

// FrameLen is the number of samples in one 20 ms frame of t.
func (t Track) FrameLen() int { return t.Rate / 50 }

// Duration is the length of t.
func (t Track) Duration() time.Duration {
	return time.Duration(len(t.PCM)) * time.Second / time.Duration(t.Rate)
}

// BuildTrack joins recordings (16 kHz) into one track: each recording's DC offset is
// removed, a 1-2 s digital silence (cycling through gaps) precedes each recording and
// follows the last, and every frame is labelled with Label, per recording.
func BuildTrack(recs []Recording) Track {
	frame := SpeechRate / 50
	t := Track{Rate: SpeechRate}
	addGap := func(i int) {
		n := int(gaps[i%len(gaps)]/FrameDuration) * frame
		t.PCM = append(t.PCM, make([]int16, n)...)
		t.Speech = append(t.Speech, make([]bool, n/frame)...)
	}
	for i, r := range recs {
		addGap(i)
		pcm := removeDC(r.PCM)
		pcm = pcm[:len(pcm)/frame*frame] // whole frames, so labels stay aligned
		labels := Label(pcm, SpeechRate)
		if first := slices.Index(labels, true); first >= 0 {
			last := len(labels) - 1 - slices.Index(reversed(labels), true)
			t.Utterances = append(t.Utterances, Span{len(t.Speech) + first, len(t.Speech) + last + 1})
		}
		t.PCM = append(t.PCM, pcm...)
		t.Speech = append(t.Speech, labels...)
	}
	addGap(len(recs))
	return t
}

func reversed(b []bool) []bool {
	r := slices.Clone(b)
	slices.Reverse(r)
	return r
}

func removeDC(pcm []int16) []int16 {
	var sum float64
	for _, s := range pcm {
		sum += float64(s)
	}
	dc := sum / float64(max(1, len(pcm)))
	out := make([]int16, len(pcm))
	for i, s := range pcm {
		out[i] = clip(float64(s) - dc)
	}
	return out
}

// Label marks the speech frames (20 ms) of one clean recording at rate Hz by energy
// against the recording's own noise floor; see the package comment for the rule.
func Label(pcm []int16, rate int) []bool {
	frame := rate / 50
	n := len(pcm) / frame
	levels := make([]float64, n)
	for i := range levels {
		levels[i] = levelDBFS(pcm[i*frame : (i+1)*frame])
	}
	sorted := slices.Clone(levels)
	slices.Sort(sorted)
	quantile := func(q float64) float64 { return sorted[int(q*float64(len(sorted)-1))] }
	if n == 0 {
		return nil
	}
	threshold := max(quantile(labelFloorQuantile)+labelAboveFloorDB, quantile(labelPeakQuantile)-labelBelowPeakDB)
	loud := make([]bool, n)
	for i, l := range levels {
		loud[i] = l > threshold
	}
	labels := make([]bool, n)
	for i := 0; i < n; {
		if !loud[i] {
			i++
			continue
		}
		j := i
		for j < n && loud[j] {
			j++
		}
		if j-i >= labelMinRun {
			for k := max(0, i-labelPreOnset); k < min(n, j+labelHangover); k++ {
				labels[k] = true
			}
		}
		i = j
	}
	return labels
}

// levelDBFS is the RMS level of pcm in dBFS (0 dBFS is an RMS of 32768), -Inf for silence.
func levelDBFS(pcm []int16) float64 {
	var sum float64
	for _, s := range pcm {
		sum += float64(s) * float64(s)
	}
	if sum == 0 {
		return math.Inf(-1)
	}
	return 10 * math.Log10(sum/float64(len(pcm))/(32768*32768))
}

func clip(v float64) int16 {
	return int16(math.Max(math.MinInt16, math.Min(math.MaxInt16, math.Round(v))))
}
