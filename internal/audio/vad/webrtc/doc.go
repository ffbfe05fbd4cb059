// Package webrtc owns the WebRTC voice activity detector behind vad.Detector, in pure Go:
// libfvad (https://github.com/dpirch/libfvad, BSD-3-Clause), the standalone C port of the
// VAD in the WebRTC project, compiled to WebAssembly by Emscripten (the fvad.wasm of the
// npm package @echogarden/fvad-wasm 0.2.0, fetched by scripts/engines.sh) and run on the
// wazero runtime, so it needs neither cgo nor a shared library.
//
// An Engine compiles fvad.wasm once per process; each Detector is its own module instance
// (its own linear memory and fvad state), so detectors never share mutable state and may run
// on different goroutines, each driven by one goroutine. libfvad classifies frames of 10, 20
// or 30 ms at 8, 16, 32 or 48 kHz as speech or not; a Detector buffers whatever frame length
// it is given into those frames and turns the per-frame decisions into SpeechStart and
// SpeechEnd with the same start/end hysteresis as the energy VAD.
//
// The module's interface, taken from the compiled binary (Emscripten minifies the names):
// it imports module "a" with "a" = __assert_fail(i32, i32, i32, i32) and "b" =
// emscripten_resize_heap(i32) i32, and exports "c" memory, "d" __wasm_call_ctors,
// "e" fvad_new, "f" malloc, "g" fvad_reset, "h" fvad_free, "i" free, "j" fvad_set_mode,
// "k" fvad_set_sample_rate and "l" fvad_process (1 speech, 0 not, -1 error).
//
// Memory: Emscripten declares 16 MiB of initial linear memory (258 pages), almost all of
// it the unused heap. The Engine lowers the declared initial size to 2 pages (128 KiB: the
// 64 KiB stack, static data and about 60 KiB of heap, of which libfvad needs a few KiB),
// never below what the module's static layout needs (the end of its data segments and
// the initial stack pointer); the heap still grows on demand through
// emscripten_resize_heap. If the lowered module fails its self-test the Engine keeps the
// declared size. A detector then costs about 180 KiB of Go heap (128 KiB of it linear
// memory), against about 16.5 MiB with the declared size.
package webrtc
