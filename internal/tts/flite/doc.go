// Package flite is Handset's offline text-to-speech provider: CMU Flite 2.2 (Debian's
// flite1-dev) linked into the process through cgo, behind voice.Synthesizer. It owns
// choosing a voice for the asked rate (kal, flite's 8 kHz diphone voice, for telephone
// audio; a 16 kHz voice, slt by default, for everything else), streaming each sentence's
// samples as flite's audio_streaming_info callback hands them over, converting them to
// the caller's rate and encoding, and stopping flite when the reader is closed or the
// context ends.
//
// Flite needs cgo and its libraries, so it is linked only in builds with the tag
// `embedded` (go build -tags embedded); Available reports whether it is, and without it
// New returns ErrNotLinked, which names the tag. The rest (text splitting, streaming,
// conversion) is plain Go, built and tested in every build.
//
// License: flite and its voices are under CMU's BSD-style license (Carnegie Mellon
// University and the University of Edinburgh: free to use, modify and redistribute,
// keeping the copyright notice, marking modifications and not using the authors' names
// for endorsement), with a few files under other BSD/MIT-style terms (Debian's
// copyright file lists them); only its build scripts are GPL. Linking it therefore puts
// no copyleft on the binary. Record it in NOTICE.
//
// Latency. flite analyses a whole utterance before its first sample, so a long text is
// cut into sentences (and a long first sentence at a clause) and spoken one after
// another; within each, audio streams as the vocoder makes it. Concurrency: see cgo.go.
//
// Measured on the project's 2-core machine (go test -tags embedded -bench .), from
// Synthesize to the first audio of a two-sentence, 90-character reply, and real-time
// factor (synthesis time / audio time):
//
//	kal, mulaw/8000:  first audio 2.8-3.6 ms, RTF 0.0015-0.004
//	slt, pcm16/16000: first audio 13-18 ms,   RTF 0.019-0.028
//
// For a 924-character paragraph (57 s of speech) the first audio comes after 7 ms (kal)
// and 23 ms (slt), while the whole takes 0.1 s and 1.2 s; spoken as one utterance, slt
// needed 280 ms for its first audio of a 270-character text. Closing the reader stops
// synthesis within a millisecond once the vocoder runs (at the latest after the current
// sentence's analysis, a few tens of milliseconds).
package flite
