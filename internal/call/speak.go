package call

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/voice"
)

// How a reply is spoken when a voice fails (docs/turn-taking.md, "When a speech provider
// fails"). A sentence a voice could not speak is tried once more on it, unless the voice
// refused the request outright, or stayed silent past Config.TTSTimeout while another
// voice is left to try; then on the fallback voice. After the primary failed, the
// fallback goes first for Config.TTSHold. A sentence no voice could speak is never heard,
// so it leaves the agent's history and the transcript; the caller hears the error message
// instead, and if even that cannot be spoken the call ends as tts_failed rather than
// leave the caller in silence.

// errVoiceSilent is the cause of an attempt cut off for want of audio.
var errVoiceSilent = errors.New("no audio in time")

// speaker speaks one reply's sentences. It runs on the reply's speaker goroutine.
type speaker struct {
	c      *Call
	r      *reply
	format audio.Format
	seg    int  // segments so far: each attempt at a sentence gets a mark of its own
	spoke  bool // some sentence was queued whole
}

// speak synthesises each queued sentence and queues its audio for playout.
func (c *Call) speak(r *reply) {
	sp := &speaker{c: c, r: r, format: c.deps.Leg.Info().Format}
	replyStarted := false
	var lostWords, spokeError, lostError bool
	for {
		s, ok := r.queue.next(r.ctx)
		if !ok {
			break
		}
		if s.kind == sentenceFiller && replyStarted {
			continue // the reply got there first: a filler now would talk over it
		}
		replyStarted = replyStarted || s.kind == sentenceReply
		ok = sp.sayRequested(s)
		if r.ctx.Err() != nil {
			return
		}
		if s.kind == sentenceNotice { // the carrier says when the caller has heard it
			c.playout.enqueue(r.turn, nil, fmt.Sprintf(noticeMark, r.turn))
		}
		switch {
		case s.kind == sentenceError && ok:
			spokeError = true
		case s.kind == sentenceError:
			lostError = true
		case !ok && s.kind != sentenceFiller:
			lostWords = true
		}
	}
	if lostWords && !spokeError && !lostError {
		// The caller missed part of the reply: they hear the error message instead, in
		// whatever voice still works.
		if msg := c.cfg.Turn.ErrorMessage; msg != "" {
			lostError = !sp.sayRequested(sentence{text: msg, kind: sentenceError})
		} else {
			lostError = !sp.spoke
		}
		if r.ctx.Err() != nil {
			return
		}
	}
	if lostError {
		c.post(ttsDead{turn: r.turn}) // nothing can be said: end the call rather than go silent
	}
	c.post(speechQueued{turn: r.turn})
	c.playout.enqueue(r.turn, nil, fmt.Sprintf("t%d-end", r.turn))
}

// sayRequested announces s to the turn machine and speaks it; a sentence no voice could
// speak is reported lost.
func (sp *speaker) sayRequested(s sentence) bool {
	c, r := sp.c, sp.r
	c.post(ttsRequested{turn: r.turn, text: s.text, kind: s.kind})
	if sp.say(s) {
		return true
	}
	if r.ctx.Err() == nil {
		c.post(ttsLost{turn: r.turn, text: s.text, kind: s.kind})
	}
	return false
}

// voices lists the voices to try, in order.
func (c *Call) voices() []voice.Synthesizer {
	switch {
	case c.deps.TTSFallback == nil:
		return []voice.Synthesizer{c.deps.TTS}
	case c.deps.Clock.Now().UnixNano() < c.ttsHoldUntil.Load():
		return []voice.Synthesizer{c.deps.TTSFallback, c.deps.TTS}
	}
	return []voice.Synthesizer{c.deps.TTS, c.deps.TTSFallback}
}

// say speaks one sentence: each voice in turn, each tried twice unless its failure says a
// second try is pointless. It reports whether the sentence was queued whole.
func (sp *speaker) say(s sentence) bool {
	c, r := sp.c, sp.r
	voices := c.voices()
	for i, v := range voices {
		last := i == len(voices)-1
		for try := 0; try < 2; try++ {
			err := sp.attempt(v, s)
			if err == nil {
				if v != c.deps.TTS {
					c.post(ttsFallbackUsed{turn: r.turn, name: v.Name()})
				}
				sp.spoke = true
				return true
			}
			if r.ctx.Err() != nil {
				return false
			}
			c.post(ttsFailed{turn: r.turn, name: v.Name(), err: err})
			if !retryVoice(err, last) {
				break
			}
		}
		if v == c.deps.TTS && c.deps.TTSFallback != nil {
			c.ttsHoldUntil.Store(c.deps.Clock.Now().Add(c.cfg.TTSHold).UnixNano())
		}
	}
	return false
}

// retryVoice: whether a second try of the same voice could speak the sentence. Refused
// credentials or text will be refused again. A voice that stayed silent past the timeout
// would cost the caller that wait again: only worth it when no other voice is left.
func retryVoice(err error, last bool) bool {
	switch voice.KindOf(err) {
	case voice.KindAuth, voice.KindBadInput, voice.KindCanceled:
		return false
	case voice.KindTimeout:
		return last
	}
	return true
}

// attempt speaks s with v: its audio in whole frames, then its mark. Audio that v stopped
// giving partway is left to play, behind a mark of its own that the agent's history counts
// as no words; the next attempt speaks the sentence from its start.
func (sp *speaker) attempt(v voice.Synthesizer, s sentence) error {
	c, r, format := sp.c, sp.r, sp.format
	sp.seg++
	mark := fmt.Sprintf("t%d-s%d", r.turn, sp.seg)
	ctx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	timeout := c.cfg.TTSTimeout
	var timer clock.Timer // armed until the first audio, re-armed by each piece after it
	if timeout > 0 {
		timer = c.deps.Clock.AfterFunc(timeout, func() { cancel(errVoiceSilent) })
		defer timer.Stop()
	}
	fail := func(err error) error {
		if errors.Is(context.Cause(ctx), errVoiceSilent) && r.ctx.Err() == nil {
			return &voice.ProviderError{Provider: v.Name(), Op: "synthesize", Kind: voice.KindTimeout,
				Err: fmt.Errorf("%w (%v)", errVoiceSilent, timeout)}
		}
		return err
	}
	rc, err := v.Synthesize(ctx, s.text, format)
	if err != nil {
		return fail(err)
	}
	defer rc.Close()
	frameBytes := format.FrameBytes()
	buf := make([]byte, 4*frameBytes)
	carry := make([]byte, 0, frameBytes) // a partial frame carried to the next read
	var frames []*frameBuf               // this read's whole frames (the slice is reused)
	total := 0
	for {
		n, err := rc.Read(buf)
		if n > 0 {
			if total == 0 {
				c.post(ttsFirstByte{turn: r.turn, mark: mark})
			}
			total += n
			if timer != nil {
				timer.Reset(timeout)
			}
			frames = frames[:0]
			data := buf[:n]
			for len(carry)+len(data) >= frameBytes {
				f := c.playout.newFrame()
				k := copy(f.b, carry)
				data = data[copy(f.b[k:], data):]
				carry = carry[:0]
				frames = append(frames, f)
			}
			carry = append(carry, data...)
			if len(frames) > 0 && !c.playout.enqueueAudio(r.turn, frames, "", s.kind == sentenceFiller) {
				return r.ctx.Err()
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if total > 0 { // what went out plays; it is no words of the reply
				sp.finish(s, mark, carry, total, true)
			}
			return fail(err)
		}
	}
	sp.finish(s, mark, carry, total, false)
	return nil
}

// finish queues the last partial frame of an attempt (padded with silence) and its mark.
func (sp *speaker) finish(s sentence, mark string, carry []byte, total int, cut bool) {
	c, r := sp.c, sp.r
	var frames []*frameBuf
	if len(carry) > 0 {
		f := c.playout.newFrame()
		pad(f.b, carry, sp.format)
		frames = append(frames, f)
	}
	c.post(segmentQueued{turn: r.turn, mark: mark, text: s.text, kind: s.kind, cut: cut, dur: sp.format.Duration(total)})
	c.playout.enqueueAudio(r.turn, frames, mark, s.kind == sentenceFiller)
}

// pad fills frame with part followed by silence.
func pad(frame, part []byte, f audio.Format) {
	copy(frame, part)
	fill := silenceByte(f)
	for i := len(part); i < len(frame); i++ {
		frame[i] = fill
	}
}

func silenceByte(f audio.Format) byte {
	switch f.Encoding {
	case audio.Mulaw:
		return 0xff
	case audio.Alaw:
		return 0xd5
	}
	return 0
}
