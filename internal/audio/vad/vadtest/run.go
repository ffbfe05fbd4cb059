package vadtest

import (
	"fmt"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/audio/vad"
)

// RawSpeecher is implemented by detectors that expose their classifier's decision for the
// latest audio they analysed, before the start/end hysteresis. Run scores it per frame.
type RawSpeecher interface {
	RawSpeech() bool
}

// Score counts frame decisions against the truth.
type Score struct{ TP, FP, FN, TN int }

func (s *Score) add(got, want bool) {
	switch {
	case got && want:
		s.TP++
	case got:
		s.FP++
	case want:
		s.FN++
	default:
		s.TN++
	}
}

// Precision is the share of frames called speech that are speech.
func (s Score) Precision() float64 { return ratio(s.TP, s.TP+s.FP) }

// Recall is the share of speech frames called speech.
func (s Score) Recall() float64 { return ratio(s.TP, s.TP+s.FN) }

// F1 is the harmonic mean of precision and recall.
func (s Score) F1() float64 {
	p, r := s.Precision(), s.Recall()
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

// FalseAlarm is the share of non-speech frames called speech.
func (s Score) FalseAlarm() float64 { return ratio(s.FP, s.FP+s.TN) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Lags are how late a detector reports transitions by design: SpeechStart comes Start
// after the speech began (its start hysteresis) and SpeechEnd comes End after it ended.
type Lags struct{ Start, End time.Duration }

// Result is how one detector did on one degraded track.
type Result struct {
	Condition Condition
	// Raw scores the classifier's per-frame decision (RawSpeecher); HasRaw is false when
	// the detector does not expose one.
	Raw    Score
	HasRaw bool
	// Segment scores the speech segments the events describe, each start moved back by
	// Lags.Start and each end by Lags.End: the audio a caller of the detector recovers
	// from its buffer and treats as speech.
	Segment Score
	// Utterances is the number of recordings in the track. Detected is how many of them a
	// segment found: it overlaps the utterance and begins at most 500 ms before it.
	// Split counts the extra segments found inside detected utterances (an utterance cut
	// in two counts 1). Merged counts utterances swallowed by the segment of an earlier
	// one, which failed to end in the 1-2 s gap. FalseStarts counts segments that found
	// no utterance: they lie in a gap, or began there and ran into speech.
	Utterances, Detected, Split, Merged, FalseStarts int
	// StartDelay is the mean time from a detected utterance's first speech frame to the end
	// of the frame that reported its SpeechStart (negative when the detector started
	// early); EndDelay the mean time from its last speech frame to the end of the frame that
	// reported its SpeechEnd, over detected utterances whose last segment ended before the
	// next utterance.
	StartDelay, EndDelay time.Duration
}

type segment struct {
	Span
	startEvent, endEvent int // frames that reported the transitions; endEvent -1 if open
}

// Run feeds t to d in 20 ms frames and scores it. d must be fresh (or Reset) and run at
// t.Rate.
func Run(d vad.Detector, t Track, lags Lags) (Result, error) {
	if d.SampleRate() != t.Rate {
		return Result{}, fmt.Errorf("vadtest: detector runs at %d Hz, track is %d Hz", d.SampleRate(), t.Rate)
	}
	var res Result
	raw, hasRaw := d.(RawSpeecher)
	res.HasRaw = hasRaw
	n := t.FrameLen()
	startLag := int((lags.Start + FrameDuration/2) / FrameDuration)
	endLag := int((lags.End + FrameDuration/2) / FrameDuration)
	var segs []segment
	open := segment{Span: Span{-1, -1}}
	for i, want := range t.Speech {
		ev := d.Process(t.PCM[i*n : (i+1)*n])
		if hasRaw {
			res.Raw.add(raw.RawSpeech(), want)
		}
		switch ev {
		case vad.SpeechStart:
			if open.Start >= 0 {
				return res, fmt.Errorf("vadtest: frame %d: SpeechStart while in speech", i)
			}
			open = segment{Span: Span{max(0, i-startLag+1), -1}, startEvent: i}
		case vad.SpeechEnd:
			if open.Start < 0 {
				return res, fmt.Errorf("vadtest: frame %d: SpeechEnd while not in speech", i)
			}
			open.End, open.endEvent = max(open.Start, i-endLag+1), i
			segs = append(segs, open)
			open.Start = -1
		}
		if d.InSpeech() != (open.Start >= 0) {
			return res, fmt.Errorf("vadtest: frame %d: InSpeech %v disagrees with the events", i, d.InSpeech())
		}
	}
	if open.Start >= 0 {
		open.End, open.endEvent = len(t.Speech), -1
		segs = append(segs, open)
	}
	inSeg := make([]bool, len(t.Speech))
	for _, s := range segs {
		for j := s.Start; j < s.End; j++ {
			inSeg[j] = true
		}
	}
	for i, want := range t.Speech {
		res.Segment.add(inSeg[i], want)
	}
	res.count(t.Utterances, segs)
	return res, nil
}

// earlyStart is how far before an utterance a segment may begin and still count as finding
// it: further back, the detector triggered on the noise and happened to run into speech.
const earlyStart = 500 * time.Millisecond

// count fills in the utterance-level numbers. A segment hits the first utterance it
// overlaps when it begins no more than earlyStart before it; a segment that hits nothing is
// a false start, and each further utterance a hitting segment overlaps is merged into it.
func (res *Result) count(utts []Span, segs []segment) {
	res.Utterances = len(utts)
	early := int(earlyStart / FrameDuration)
	hits := make([][]segment, len(utts))
	for _, s := range segs {
		first, n := -1, 0
		for k, u := range utts {
			if s.Start < u.End && s.End > u.Start {
				if first < 0 {
					first = k
				}
				n++
			}
		}
		if first < 0 || s.Start < utts[first].Start-early {
			res.FalseStarts++
			continue
		}
		hits[first] = append(hits[first], s)
		res.Merged += n - 1
	}
	var startSum, endSum, ends int
	for k, u := range utts {
		h := hits[k]
		if len(h) == 0 {
			continue
		}
		res.Detected++
		res.Split += len(h) - 1
		startSum += h[0].startEvent + 1 - u.Start
		if last := h[len(h)-1]; last.endEvent >= 0 && (k+1 == len(utts) || last.End <= utts[k+1].Start) {
			endSum += last.endEvent + 1 - u.End
			ends++
		}
	}
	if res.Detected > 0 {
		res.StartDelay = time.Duration(startSum) * FrameDuration / time.Duration(res.Detected)
	}
	if ends > 0 {
		res.EndDelay = time.Duration(endSum) * FrameDuration / time.Duration(ends)
	}
}

// Table formats results as a fixed-width table, one row per condition, for test logs and
// reports. P, R, F1 and FA are precision, recall, F1 and false-alarm rate.
func Table(name string, results []Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%-24s | %-23s | %-23s | %-27s | %s\n", name, "", "raw frames", "segments", "utterances", "mean delay")
	fmt.Fprintf(&b, "%-24s | %-23s | %-23s | %-27s | %s\n", "condition",
		"P     R     F1    FA", "P     R     F1    FA", "found split merged false", "start    end")
	for _, r := range results {
		rawCol := "-"
		if r.HasRaw {
			rawCol = scoreCols(r.Raw)
		}
		fmt.Fprintf(&b, "%-24s | %-23s | %-23s | %2d/%-2d %5d %6d %5d      | %5dms %5dms\n",
			r.Condition, rawCol, scoreCols(r.Segment),
			r.Detected, r.Utterances, r.Split, r.Merged, r.FalseStarts,
			r.StartDelay.Milliseconds(), r.EndDelay.Milliseconds())
	}
	return b.String()
}

func scoreCols(s Score) string {
	return fmt.Sprintf("%5.3f %5.3f %5.3f %5.3f", s.Precision(), s.Recall(), s.F1(), s.FalseAlarm())
}
