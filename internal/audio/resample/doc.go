// Package resample owns sample-rate conversion of mono 16-bit PCM between the rates
// Handset speaks: 8000, 16000, 24000 and 48000 Hz, and 22050 Hz (espeak-ng's output), in
// any direction.
//
// A Resampler converts by the rational ratio L/M (to/from in lowest terms) with a polyphase
// FIR: a Kaiser-windowed sinc low-pass designed at L·from Hz, cut at the lower of the two
// Nyquist frequencies, so up-sampling removes images and down-sampling removes aliases.
// The passband is flat (well under 0.1 dB) to 0.42 of the lower rate (3.36 kHz when one side
// is 8 kHz) and the stopband, from the lower Nyquist frequency up, is at least 60 dB down.
// Each polyphase branch is normalised to unit DC gain, so a constant input gives a constant
// output with no ripple.
//
// The filter's input history and phase are kept between calls, so feeding a stream in any
// chunking (for example 20 ms frames) gives exactly the samples one whole-buffer call would,
// with no clicks at chunk boundaries. The price is a fixed delay of Delay().
//
// The 22050 Hz conversions have large ratios (22050 to 8000 is 160/441, 8000 to 22050 is
// 441/160), so their prototype filters are long (up to about 20 000 taps at the virtual
// up-sampled rate, 80 KB of coefficients) though each output sample still costs only one
// branch of 46 to 125 taps; their delay is 1.0 to 2.9 ms. Designing one takes about
// 1.3 ms, so designed filters are kept in a process-wide cache and shared, read-only, by
// every Resampler of that conversion.
//
// Measured per 20 ms frame on the project's 2-core machine (go test -bench Process20ms,
// two runs): 22050 to 8000 10-14 µs, to 16000 16 µs, to 24000 14-20 µs, to 48000 36-37 µs;
// to 22050 from 8000 13-18 µs, 16000 14-18 µs, 24000 14-19 µs, 48000 28-31 µs. For scale,
// 8000 to 16000 takes 10-12 µs and 16000 to 48000 36-54 µs. No allocations.
// 44100 Hz is not offered: other packages rely on New refusing it.
package resample
