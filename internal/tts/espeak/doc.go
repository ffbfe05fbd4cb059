// Package espeak is Handset's espeak-ng text-to-speech provider, for languages flite does
// not speak. It owns running espeak-ng once per utterance as a child process (the text on
// its standard input, never on its command line), reading the streaming WAV espeak-ng
// writes to its standard output (whose RIFF sizes are placeholders, so the header is
// parsed here and the samples run to the end of the stream), converting its 22050 Hz PCM
// to the caller's rate and encoding, and killing and reaping the process when the reader
// is closed or the context ends. A non-zero exit becomes a *voice.ProviderError carrying
// the last line espeak-ng wrote to standard error.
//
// License: espeak-ng is GPL-3.0-or-later. Linking libespeak-ng into Handset would make
// the distributed binary a GPL work, so Handset never links it: it only runs the
// separately installed espeak-ng program (apt-get install espeak-ng) and reads its
// output, which leaves Handset's own license alone. Do not add cgo bindings here.
//
// Quality: espeak-ng is a formant synthesiser, robotic but intelligible to people, and
// PocketSphinx recognises it badly (89 % WER), so it is no stand-in caller for tests.
//
// Measured on the project's 2-core machine (go test -bench .), espeak-ng 1.51, en-us at
// 160 words per minute, a two-sentence, 90-character reply (6 s of speech): first audio
// 26-38 ms after Synthesize, nearly all of it process start; real-time factor 0.006-0.009
// for the whole reply, process start included (espeak-ng itself runs at about 0.002).
// Resampling 22050 Hz costs 10-36 µs per 20 ms frame (see package resample).
package espeak
