package phone

import "time"

// ReplyGap is the silence after Handset's speech that ends a reply on an audio-only
// stream. Handset's synthetic and real voices pause far less than this between words and
// sentences, and a SIP trunk's Handset sends comfort silence between replies, so the gap
// is heard as it happens.
const ReplyGap = 500 * time.Millisecond

// replyEnds finds reply ends in the audio of an audio-only stream, frame by frame as it
// arrives: speech, then ReplyGap without any, is one reply end. It is the stand-in for
// the "t<N>-end" marks a media-stream carrier returns, and keeps counting on a lean call,
// which keeps no audio.
type replyEnds struct {
	talking    bool
	lastSpeech time.Duration // the end of the latest speech frame, played as it arrived
}

// frame notes one received frame (8 kHz mu-law) that arrived at now, to play from then;
// ended reports a reply that ended with this frame's silence, and when its speech ended.
func (r *replyEnds) frame(mulaw []byte, now time.Duration) (speechEnd time.Duration, ended bool) {
	end := now + audioDuration(len(mulaw))
	if isSpeech(mulaw) {
		r.talking, r.lastSpeech = true, end
		return 0, false
	}
	if r.talking && end-r.lastSpeech >= ReplyGap {
		r.talking = false
		return r.lastSpeech, true
	}
	return 0, false
}

// ReplyEnds counts the ReplyEnded events: how many of Handset's replies have been heard
// to their end on an audio-only stream.
func (s Snapshot) ReplyEnds() int { return s.Count(ReplyEnded) }
