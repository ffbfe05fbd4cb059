// Package sphinx owns Handset's offline speech-to-text: a voice.Recognizer ("sphinx")
// that decodes calls on this machine with CMU PocketSphinx 5prealpha (Debian's
// libpocketsphinx-dev) and its US English model (the package pocketsphinx-en-us, in
// DefaultModelDir). PocketSphinx, sphinxbase and the model are BSD-2-Clause, © Carnegie
// Mellon University.
//
// # Quality: a demo, not a phone STT
//
// The model is a 2015 continuous-density model trained on 16 kHz speech; there is no
// 8 kHz model, so telephone audio is up-sampled and decoded with its upper band empty.
// Measured on this project's 2-core reference machine, in the fast mode used here
// (-fwdflat no -bestpath no), word error rates are:
//
//   - flite voices speaking eight caller lines: slt 14%, rms 5% at 16 kHz; rms through
//     8 kHz mu-law 23%;
//   - recorded human read speech (pocketsphinx-testdata LibriVox): 23% at 16 kHz, 28%
//     through 8 kHz mu-law; short card names from other speakers: 14% and 57%;
//   - a call's first utterance, before the normalisation has seen its line: 24% and 45%
//     on the same recordings.
//
// Noise makes it much worse (67% at 15 dB SNR in the reference study). It is good for a
// hello-world call, for CI that closes the loop with synthetic callers, and for keyword
// intents; configure a cloud STT (deepgram) for real callers.
//
// Cost, measured here: one decoder decodes at 0.13 (flite) to 0.18 (human speech) of real
// time, 0.23 on up-sampled phone audio; the Final comes 28 ms on average (80 ms at worst)
// after Finalize; a decoder holds about 90 MB of resident memory and loads in about 300 ms
// (New loads them in parallel).
//
// # Builds
//
// The decoder needs cgo, so it is linked only in builds with the tag embedded (go build
// -tags embedded, which needs libpocketsphinx-dev); Available reports whether it is, and
// elsewhere New returns ErrNotLinked. CheckModel, the stream logic and its tests are plain
// Go in every build: the stream drives the decoder through a small interface that tests
// fill with a fake.
//
// # A pool of decoders held per utterance
//
// A decoder is too big to give every call its own, and a call is silent most of the
// time, so New loads a fixed pool (Options.Decoders, default 2: one per core) shared by
// every stream, and a stream holds one only while someone may be speaking. Each stream
// has one goroutine, fed by Write and Finalize through a queue of about 10 s that never
// blocks them (when full, the oldest audio is dropped and counted). Audio is converted to
// 16 kHz PCM16 (G.711 decoded, 8 kHz up-sampled) and cut into 20 ms frames, and then:
//
//   - Idle, the stream keeps the last 300 ms as pre-roll. A frame louder than -50 dBFS
//     (RMS with the DC removed) opens an utterance. -50 dBFS sits just above the noise
//     floor of the recorded test speech (-52 to -66 dBFS) and 25 dB or more under its
//     median speech level (-26 to -40 dBFS), and far above the mu-law quantisation of a
//     silent line (-72 dBFS). The gate is not the VAD: it only decides when a decoder is
//     worth taking, so it is set low, and the pre-roll catches soft word onsets.
//   - The stream asks the pool for a decoder. If all are busy it waits in line (first
//     come, first served; a decoder given back goes straight to the first in line) and
//     keeps up to 10 s of audio meanwhile, dropping the oldest beyond. With a decoder it
//     starts an utterance and feeds the pre-roll, the held audio, then every frame.
//   - Partials: about every 100 ms of audio it reads the hypothesis and sends it as a
//     non-final Transcript when it changed.
//   - Finalize (the engine's VAD heard the end of speech) ends the utterance, sends its
//     Final (lower-case words; empty when nothing was recognised, and empty when no
//     utterance was open) and gives the decoder back. A Finalize while waiting for a
//     decoder is answered as soon as one comes.
//   - Two seconds below the gate, or two seconds with no audio at all (the engine stops
//     writing while the agent speaks), end the utterance silently: its hypothesis is
//     discarded, because the engine's VAD, not this gate, says what speech is, and a Final
//     reaching an idle engine would become a turn. Only Finalize and the cap emit Finals.
//   - An utterance is capped at 30 s: it ends with its Final and the next loud frame
//     starts another (letting a waiting stream go first).
//   - Close, a cancelled context or Recognizer.Close ends the stream: an utterance in
//     progress is discarded, the decoder goes back, Results is closed.
//
// A decoder's live cepstral mean normalisation (the running estimate of the line it
// subtracts from every frame, kept for a whole utterance and updated at its end) belongs
// to the call, not to the decoder: a stream saves the state when its utterance ends and
// restores it when its next begins, whichever decoder it gets, so calls sharing a pool do
// not inherit each other's lines. A stream's first utterance starts from the state the
// latest utterance with words at its sample rate ended with, or, before any, from a mean
// measured on flite speech for that rate (coldMeans in ps.go): the model's own initial mean
// costs a first utterance 38% against 24% WER at 16 kHz, and 88% against 45% on the phone.
package sphinx
