// Package resample owns sample-rate conversion of mono 16-bit PCM between the rates
// Handset speaks: 8000, 16000, 24000 and 48000 Hz, in any direction.
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
package resample
