// Package audiotest owns synthetic audio for tests, fakes and the load generator: tones,
// silence, white noise and a speech-like signal, plus the measurements that check them
// (RMS level, Goertzel tone power) and small helpers to mix, join and mu-law encode.
//
// All levels are in dBFS relative to a full-scale square wave: 0 dBFS is an RMS of 32768,
// so a full-scale sine measures about -3.01 dBFS. Sample slices are mono int16 PCM; every
// generator takes the sample rate in Hz and a duration, and rounds the length down to whole
// samples. Generators are deterministic: the same arguments (and seed) give the same samples.
//
// Import this package only from tests, fakes and the simulator, never from production paths.
package audiotest
