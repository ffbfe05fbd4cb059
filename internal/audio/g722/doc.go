// Package g722 implements the ITU-T G.722 wideband speech codec at 64 kbit/s (mode 1).
//
// G.711 telephony (PCMU, PCMA) carries 8000 samples a second: nothing above 4 kHz
// survives, which is why "s" and "f" sound alike on a phone and why speech-to-text does
// better on wideband audio. G.722 carries 16000 samples a second (50-7000 Hz) in the
// same 64 kbit/s as G.711, so a SIP trunk that offers it gives the call twice the audio
// bandwidth at no network cost. It splits the signal with a quadrature mirror filter
// (QMF) into a lower band (0-4 kHz) and a higher band (4-8 kHz), each at 8000 samples a
// second, and codes each band with its own adaptive differential PCM (ADPCM) coder: 6
// bits per lower-band sample and 2 bits per higher-band sample, one byte per pair of
// input samples. Each ADPCM coder predicts the next sample from the ones it has
// reconstructed (a pole-zero predictor whose coefficients adapt) and quantizes only the
// prediction error, with a step size that adapts to the signal's loudness. Encoder and
// decoder run the same adaptation from the same codes, so they stay in step without side
// information; that is also why a decoder's state matters after packet loss.
//
// Encoder and Decoder are stateful (one per direction of a call), work on 16-bit
// little-endian PCM bytes at 16000 Hz, append into caller buffers and never allocate.
// Only mode 1 (64 kbit/s, all 6 lower-band bits) is implemented: it is the only mode SIP
// payload type 9 carries.
package g722
