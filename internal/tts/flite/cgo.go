//go:build embedded

package flite

// Thread safety. flite's voices are process-wide singletons: register_cmu_us_kal and its
// siblings return the same cst_voice to every caller, and registration writes globals
// (the voice pointer; the CMU lexicon and letter-to-sound rules all five voices share).
// Synthesis, though, keeps all its working state in the utterance it builds and only
// reads the voice and its databases. So this package makes concurrent Synthesize calls
// safe by:
//
//  1. Registering every voice exactly once, under a sync.Once, before the first
//     Synthesizer exists; nothing writes flite's globals after that.
//  2. Never writing to a shared voice. The per-call streaming callback (and the handle
//     that leads it back to its stream) is set on the utterance's own features, which
//     flite searches before the voice's (utt_init links the voice's features in behind
//     them). Setting it on the voice, as flite's examples do, would let concurrent calls
//     steal each other's audio.
//  3. Giving each call its own utterance, so calls share nothing writable.
//
// No lock is held while flite runs, so calls synthesise in parallel. This was checked
// with valgrind's helgrind on a C program doing what bridge.c does from 4 threads, both
// on one shared voice (each of the five) and across voices: it reported no data race in
// libflite. The only races it showed were inside glibc's rand(), which the clustergen
// vocoder calls for noise excitation and which glibc serialises with its own lock (that
// is also why slt, rms and awb are not bit-for-bit repeatable; kal and kal16 are).
//
// One more process-wide hazard remains: on an internal error flite calls exit(-1) unless
// the global cst_errjmp is set, and a global jump buffer cannot serve concurrent
// threads. clean() therefore removes what could upset it (invalid UTF-8, control
// characters); flite's CLI, fed digits, symbols, URLs and non-Latin scripts, never failed.

/*
#cgo LDFLAGS: -lflite_cmu_us_kal -lflite_cmu_us_kal16 -lflite_cmu_us_slt -lflite_cmu_us_rms -lflite_cmu_us_awb -lflite_usenglish -lflite_cmulex -lflite -lm
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// linked is true: this build links flite.
const linked = true

var registerOnce sync.Once

// fliteVoice is a registered flite voice. The pointer is C memory that lives as long as
// the process.
type fliteVoice struct {
	name string
	v    unsafe.Pointer // *cst_voice
	sr   int
}

func loadVoice(n string) (speaker, error) {
	registerOnce.Do(func() { C.handset_flite_register() })
	cn := C.CString(n)
	defer C.free(unsafe.Pointer(cn))
	var rate C.int
	v := C.handset_flite_voice(cn, &rate)
	if v == nil || rate <= 0 {
		return nil, fmt.Errorf("flite: voice %q did not register", n)
	}
	return &fliteVoice{name: n, v: v, sr: int(rate)}, nil
}

func (v *fliteVoice) id() string { return v.name }
func (v *fliteVoice) rate() int  { return v.sr }

// chunkSink is what the C callback reaches through its handle.
type chunkSink struct {
	sink    func([]int16) bool
	stopped bool
}

func (v *fliteVoice) speak(text string, sink func([]int16) bool) error {
	ct := C.CString(text)
	defer C.free(unsafe.Pointer(ct))
	cs := &chunkSink{sink: sink}
	h := cgo.NewHandle(cs)
	defer h.Delete()
	rc := C.handset_flite_synth(v.v, ct, C.uintptr_t(h))
	switch {
	case cs.stopped:
		return errStopped
	case rc != 0:
		return errors.New("flite produced no utterance")
	}
	return nil
}

// handsetFliteChunk receives n new samples from flite (C memory, valid during the call).
//
//export handsetFliteChunk
func handsetFliteChunk(h C.uintptr_t, samples *C.short, n C.int) C.int {
	cs := cgo.Handle(h).Value().(*chunkSink)
	pcm := unsafe.Slice((*int16)(unsafe.Pointer(samples)), int(n))
	if !cs.sink(pcm) {
		cs.stopped = true
		return C.HANDSET_FLITE_STOP
	}
	return C.HANDSET_FLITE_CONT
}
