/* The C side of package flite (built only with the Go build tag "embedded"): it keeps
 * flite's own types out of the cgo preamble, so Go sees voices as opaque pointers. */
#ifndef HANDSET_FLITE_BRIDGE_H
#define HANDSET_FLITE_BRIDGE_H

#include <stdint.h>

/* Return values of the streaming callback (flite's CST_AUDIO_STREAM_CONT and _STOP). */
#define HANDSET_FLITE_CONT 0
#define HANDSET_FLITE_STOP (-1)

/* handset_flite_register initialises flite and registers every linked voice. It writes
 * process-wide state, so it must run once, before any synthesis. */
void handset_flite_register(void);

/* handset_flite_voice returns the registered voice called name ("kal", "kal16", "slt",
 * "rms" or "awb") and stores its sample rate in *rate, or returns NULL. */
void *handset_flite_voice(const char *name, int *rate);

/* handset_flite_synth speaks text with voice, handing the samples to the Go callback
 * handsetFliteChunk(handle, ...) as flite produces them. It returns 0 when flite
 * finished (or was stopped by the callback) and -1 when it produced no utterance. */
int handset_flite_synth(void *voice, const char *text, uintptr_t handle);

#endif
