// Package silero owns the Silero VAD behind vad.Detector: the Silero VAD v5 neural model
// (https://github.com/snakers4/silero-vad, MIT; the silero_vad_v5.onnx of the npm package
// @ricky0123/vad-web 0.0.31, fetched by scripts/engines.sh) run by ONNX Runtime through
// github.com/yalue/onnxruntime_go, which dlopens libonnxruntime.so at run time.
//
// The model needs cgo, so it is linked only in builds with the tag `embedded`
// (go build -tags embedded); Available reports whether it is, and without it Init and New
// return ErrNotLinked, which names the tag. Everything but the model itself (windowing,
// smoothing, hysteresis, events) is plain Go, built and tested in every build.
//
// The model reads windows of 512 samples at 16 kHz (256 at 8 kHz) preceded by the last
// 64 (32) samples of the previous window as context, carries a [2, 1, 128] recurrent
// state from window to window, and returns the probability that the window is speech.
// A Detector turns those probabilities into events the way Patter's Silero VAD does
// (smoothing, activation and deactivation thresholds, minimum speech and silence): see
// Config and Detector.Process.
//
// Call Init once per process with the path of libonnxruntime.so (tested with ONNX Runtime
// 1.28.2); then each stream gets its own Detector, with its own single-threaded ONNX
// Runtime session, driven by one goroutine.
package silero
