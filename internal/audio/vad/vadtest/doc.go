// Package vadtest owns the accuracy harness every voice activity detector in Handset is
// measured with (energy, WebRTC, Silero): real recorded speech, labelled, degraded with
// noise and the telephone path, run through any vad.Detector and scored. Import it only
// from tests.
//
// Speech: thirteen recordings from Debian's pocketsphinx-testdata (five LibriVox
// sentences, five "cards" utterances, three short commands; 16 kHz mono), each with its DC
// offset removed, joined with 1-2 s of digital silence before, between and after them:
// about 64 s, 13 utterances, about half of it speech (SpeechTrack). Missing recordings, like
// missing engine files, go through testpeer: the test skips saying how to install them, or
// fails in the full tier.
//
// Labels: each recording is labelled on its own, per 20 ms frame, by energy (Label). Its
// noise floor is the 10th percentile of its frame levels; a frame is loud when its level
// is more than 15 dB above that floor and no more than 35 dB below the recording's 98th
// percentile level. Loud runs shorter than 40 ms (clicks) are dropped; each remaining run
// is extended 20 ms before (onsets) and 100 ms after (a short hangover over stop closures
// and decaying ends). Pauses between words longer than that stay non-speech, so a
// detector's own hangover costs it frame precision, which the segment view makes up for.
//
// Conditions: clean, then white and pink-ish noise (Pink: about -3 dB per octave) at 20,
// 10, 5 and 0 dB SNR, where SNR is the RMS of the clean speech frames against the RMS of
// the noise (active speech level, so 0 dB is harder than against the whole track's RMS);
// each at 16 kHz and through the telephone path (noise first, then down to 8 kHz and a
// G.711 mu-law round trip).
//
// Scores (Run, Result): per 20 ms frame the classifier's own decision where the detector
// exposes it (RawSpeecher), and the speech segments its events describe, moved back by its
// designed start and end lags: precision, recall, F1 and false-alarm rate. Per utterance:
// how many were found (a segment overlaps it and began at most 500 ms before it), split,
// merged into the previous one, false starts, and the mean live delay of SpeechStart after
// the speech began and of SpeechEnd after it ended.
package vadtest
