package fakedeepgram

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/handset-voice/handset/internal/audio/g711"
)

// eventKind is what the detector noticed in the audio.
type eventKind uint8

const (
	evSpeechStarted eventKind = iota + 1
	evInterim                 // InterimAfter of speech in the current utterance
	evFinal                   // the utterance ended (endpointing, Finalize or CloseStream)
	evEmptyFinal              // Finalize with no utterance pending
	evUtteranceEnd            // utterance_end_ms of silence after the last word
)

// event carries times in samples since the start of the connection's audio.
type event struct {
	kind       eventKind
	start, end int64 // span of the result
	wordsEnd   int64 // end of the last speech block (words are spread over start..wordsEnd)
	utt        int   // evFinal: the utterance's index in detector.utts
}

// minSpeech is the least speech an utterance needs to be transcribed: shorter bursts are
// clicks, not words, and use up no script line.
const minSpeech = 60 * time.Millisecond

// detector finds utterances by the RMS energy of 20 ms blocks, counting audio time only.
// An utterance begins with a speech block and ends after EndSilence of silent blocks (or
// at Finalize or CloseStream); a pause shorter than that is part of the utterance, and
// speech after it continues it.
type detector struct {
	encoding string
	rate     int
	level    float64 // RMS threshold

	block   []int16 // the 20 ms block being filled
	carry   []byte  // an odd trailing byte of linear16
	scratch []int16 // decoded samples of one message

	pos int64 // samples in completed blocks

	interimAfter, endSilence, minSpeech, uttEndGap int64 // in samples; uttEndGap 0 = off

	inUtt       bool
	uttStart    int64
	lastSpeech  int64 // end of the last speech block
	speech      int64 // speech samples in the current utterance
	interimSent bool
	uttEndArmed bool // an UtteranceEnd is due once the silence reaches uttEndGap
	lastWordEnd int64
	lastEnd     int64 // end of the last final result's span

	utts   []UtteranceStat // every utterance detected; the last is open while inUtt
	synced int             // utts[:synced] are unchanged since the connection last took them
}

func newDetector(p params, o Options) *detector {
	samples := func(d time.Duration) int64 { return int64(d) * int64(p.rate) / int64(time.Second) }
	blockLen := max(p.rate/50, 1)
	return &detector{
		encoding:     p.encoding,
		rate:         p.rate,
		level:        float64(o.SpeechLevel),
		block:        make([]int16, 0, blockLen),
		carry:        make([]byte, 0, 1),
		interimAfter: samples(o.InterimAfter),
		endSilence:   samples(o.EndSilence),
		minSpeech:    samples(minSpeech),
		uttEndGap:    samples(time.Duration(p.utteranceEndMS) * time.Millisecond),
	}
}

// feed decodes one binary message and appends what it noticed to evs.
func (d *detector) feed(data []byte, evs []event) []event {
	samples := d.decode(data)
	for len(samples) > 0 {
		n := min(cap(d.block)-len(d.block), len(samples))
		d.block = append(d.block, samples[:n]...)
		samples = samples[n:]
		if len(d.block) == cap(d.block) {
			evs = d.step(evs)
			d.block = d.block[:0]
		}
	}
	return evs
}

func (d *detector) decode(data []byte) []int16 {
	switch d.encoding {
	case "mulaw", "alaw":
		if cap(d.scratch) < len(data) {
			d.scratch = make([]int16, len(data))
		}
		if d.encoding == "mulaw" {
			return g711.DecodeMulaw(d.scratch, data)
		}
		return g711.DecodeAlaw(d.scratch, data)
	}
	// linear16: little-endian, and a sample may straddle two messages.
	n := (len(d.carry) + len(data)) / 2
	if cap(d.scratch) < n {
		d.scratch = make([]int16, n)
	}
	out := d.scratch[:0]
	if len(d.carry) == 1 && len(data) > 0 {
		out = append(out, int16(uint16(d.carry[0])|uint16(data[0])<<8))
		data = data[1:]
		d.carry = d.carry[:0]
	}
	for len(data) >= 2 {
		out = append(out, int16(binary.LittleEndian.Uint16(data)))
		data = data[2:]
	}
	if len(data) == 1 {
		d.carry = append(d.carry, data[0])
	}
	return out
}

// step classifies the completed block and advances the utterance state.
func (d *detector) step(evs []event) []event {
	start := d.pos
	d.pos += int64(len(d.block))
	end := d.pos
	if rms(d.block) >= d.level {
		if !d.inUtt {
			d.inUtt, d.uttStart, d.speech, d.interimSent = true, start, 0, false
			d.utts = append(d.utts, UtteranceStat{Start: d.dur(start)})
			evs = append(evs, event{kind: evSpeechStarted, start: start, end: start})
		}
		d.uttEndArmed = false // the caller went on: no UtteranceEnd for the last words
		d.speech += int64(len(d.block))
		d.lastSpeech = end
		d.measure(end)
		if !d.interimSent && d.speech >= d.interimAfter && d.speech >= d.minSpeech {
			d.interimSent = true
			evs = append(evs, event{kind: evInterim, start: d.uttStart, end: end, wordsEnd: end})
		}
		return evs
	}
	if d.inUtt {
		d.measure(end) // a pause, or the silence that ends it
		if end-d.lastSpeech >= d.endSilence {
			evs = d.endUtterance(evs, end, FinalEndpoint)
		}
	}
	if d.uttEndArmed && end-d.lastWordEnd >= d.uttEndGap {
		d.uttEndArmed = false
		evs = append(evs, event{kind: evUtteranceEnd, start: d.lastWordEnd, end: end, wordsEnd: d.lastWordEnd})
	}
	return evs
}

// flush ends the current utterance now: why is causeFinalize or causeClose. With nothing
// to transcribe, Finalize brings an evEmptyFinal.
func (d *detector) flush(evs []event, why cause) []event {
	end := d.pos + int64(len(d.block)) // a partial block was received too
	if d.inUtt {
		how := FinalClose
		if why == causeFinalize {
			how = FinalFinalize
		}
		n := len(evs)
		if evs = d.endUtterance(evs, end, how); len(evs) > n {
			return evs
		}
	}
	if why == causeFinalize {
		evs = append(evs, event{kind: evEmptyFinal, start: d.lastEnd, end: end})
		d.lastEnd = end
	}
	return evs
}

// endUtterance closes the open utterance at end, recording how; it appends evFinal unless
// the utterance had too little speech to transcribe.
func (d *detector) endUtterance(evs []event, end int64, how string) []event {
	d.inUtt = false
	d.measure(end)
	d.utts[len(d.utts)-1].Final = how
	if d.speech < d.minSpeech {
		return evs
	}
	evs = append(evs, event{kind: evFinal, start: d.uttStart, end: end, wordsEnd: d.lastSpeech, utt: len(d.utts) - 1})
	d.lastEnd = end
	if d.uttEndGap > 0 {
		d.uttEndArmed, d.lastWordEnd = true, d.lastSpeech
	}
	return evs
}

// measure brings the open utterance's record up to end.
func (d *detector) measure(end int64) {
	i := len(d.utts) - 1
	u := &d.utts[i]
	u.Speech = d.dur(d.lastSpeech - d.uttStart)
	u.Voiced = d.dur(d.speech)
	u.Audio = d.dur(end - d.uttStart)
	d.synced = min(d.synced, i)
}

// forget drops every utterance but the open one, once the connection has taken them, for
// a lean server that keeps no record: the detector then holds at most one.
func (d *detector) forget() {
	keep := 0
	if d.inUtt {
		keep = 1
	}
	if n := len(d.utts) - keep; n > 0 {
		copy(d.utts, d.utts[n:])
		clear(d.utts[keep:])
		d.utts = d.utts[:keep]
	}
	d.synced = len(d.utts)
}

// setText records the transcript the utterance's final result carries.
func (d *detector) setText(i int, text string) {
	d.utts[i].Text = text
	d.synced = min(d.synced, i)
}

// changed returns the utterances added or changed since the last call, and the index of
// the first of them.
func (d *detector) changed() (from int, utts []UtteranceStat) {
	from, utts = d.synced, d.utts[d.synced:]
	d.synced = len(d.utts)
	return from, utts
}

// dur is n samples as audio time.
func (d *detector) dur(n int64) time.Duration {
	return time.Duration(n) * time.Second / time.Duration(d.rate)
}

func rms(block []int16) float64 {
	if len(block) == 0 {
		return 0
	}
	var sum float64
	for _, s := range block {
		v := float64(s)
		sum += v * v
	}
	return math.Sqrt(sum / float64(len(block)))
}
